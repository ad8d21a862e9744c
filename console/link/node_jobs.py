"""Starting and stopping a job across boxes, one agent per box: the same rendezvous, its rank each.

Every box's agent is asked in node-rank order with the same rendezvous id; where one refuses (its
GPUs busy, its config another), the parts already started are stopped again, so no box is left
waiting in a rendezvous that cannot complete. A stop asks every box at once. No Textual here:
the dashboard and the headless commands share it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    LIVE_JOB_STATES,
    JobInfo,
    JobsParams,
    LaunchParams,
    NodePart,
    StopParams,
    StopResult,
)
from console.link.agent_link import AgentLink, LinkError

STOP_TIMEOUT_S = 3600.0


class NodeStartError(LinkError):
    """One box refused or could not be reached; the parts started before it were stopped."""


@dataclass(frozen=True, slots=True)
class StartedPart:
    """One box's part as its agent started it."""

    host: str
    job: JobInfo


def new_rdzv_id(name: str) -> str:
    """A fresh rendezvous id: the job's name where it is a plain one, and a random tail."""
    plain = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "-" for c in name)
    return f"{plain.strip('-._')[:40] or 'job'}-{secrets.token_hex(6)}"


async def start_on_every_box(
    links: Mapping[str, AgentLink], name: str, nodes: tuple[str, ...], force: bool = False
) -> list[StartedPart]:
    """Start job `name` on every box in `nodes`, in node-rank order, or on none of them."""
    rdzv_id = new_rdzv_id(name)
    started: list[StartedPart] = []
    for rank, host in enumerate(nodes):
        part = NodePart(rank, len(nodes), rdzv_id, nodes)
        try:
            link = links[host]
            job = await link.call(
                JOBS_LAUNCH, LaunchParams(name, force=force, node=part),
                idempotency_key=f"node-{rdzv_id}-{rank}",
            )  # fmt: skip
        except (LinkError, KeyError) as exc:  # a timeout may still have started it: look too
            undone = await _stop_started(links, started + await _parts_on(links, host, rdzv_id))
            why = str(exc) if isinstance(exc, LinkError) else "no link to it"
            raise NodeStartError(
                f"{name} not started on {host} (node {rank} of {len(nodes)}): {why}; "
                + (f"stopped it again on {undone}" if undone else "nothing was started")
            ) from None
        started.append(StartedPart(host, job))
    return started


async def stop_parts(
    links: Mapping[str, AgentLink], parts: list[tuple[str, JobInfo]]
) -> list[tuple[str, StopResult | LinkError]]:
    """Stop every live part at once; each box's answer, or why it could not be asked."""

    async def stop(host: str, job: JobInfo) -> StopResult | LinkError:
        link = links.get(host)
        if link is None:
            return LinkError(f"{host}: no link to it")
        try:
            return await link.call(
                JOBS_STOP, StopParams(job.id), idempotency_key=f"stop-{secrets.token_hex(6)}",
                timeout_s=STOP_TIMEOUT_S,
            )  # fmt: skip
        except LinkError as exc:
            return exc

    live = [(host, job) for host, job in parts if job.state in LIVE_JOB_STATES]
    answers = await asyncio.gather(*(stop(host, job) for host, job in live))
    return [(host, answer) for (host, _), answer in zip(live, answers, strict=True)]


async def _parts_on(links: Mapping[str, AgentLink], host: str, rdzv_id: str) -> list[StartedPart]:
    """The parts of `rdzv_id` a box lists (a launch that timed out may have started one)."""
    link = links.get(host)
    if link is None:
        return []
    try:
        listing = await link.call(JOBS_LIST, JobsParams())
    except LinkError:
        return []
    return [StartedPart(host, job) for job in listing.jobs
            if job.node is not None and job.node.rdzv_id == rdzv_id]  # fmt: skip


async def _stop_started(links: Mapping[str, AgentLink], started: list[StartedPart]) -> str:
    """Stop what a failed start left; says where (`a, b`), or where it could not."""
    answers = await stop_parts(links, [(part.host, part.job) for part in started])
    return ", ".join(
        host if isinstance(answer, StopResult) else f"{host} (could not: {answer})"
        for host, answer in answers
    )
