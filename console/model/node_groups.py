"""Jobs across boxes, as one: each box's part by node rank, how the whole stands, what to stop.

A job that spans boxes is one part per box, each its own agent's job; no agent can reach the
others. The console sees every box, so it puts the parts back together by their rendezvous id,
and stops the parts still running once one has failed, been killed, lost or stopped: a torchrun
whose peer is gone waits in its collectives (NCCL's timeout is half an hour) holding every GPU.
A part that exited 0 ends nothing: the others finish on their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.protocol import LIVE_JOB_STATES, JobInfo

ENDS_THE_GROUP = ("failed", "killed", "lost", "stopped")
"""A part in one of these states takes the others down with it."""


@dataclass(frozen=True, slots=True)
class NodePartSeen:
    """One box's part as its agent last reported it."""

    host: str
    job: JobInfo

    @property
    def rank(self) -> int:
        """Its node rank."""
        return self.job.node.rank if self.job.node is not None else 0


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Every part of one launch across boxes that the console has seen."""

    name: str
    rdzv_id: str
    hosts: tuple[str, ...]
    parts: tuple[NodePartSeen, ...]
    """In node-rank order; a box not heard from has no part here."""

    def live(self) -> list[NodePartSeen]:
        """The parts whose processes may still run."""
        return [part for part in self.parts if part.job.state in LIVE_JOB_STATES]

    def ended_it(self) -> NodePartSeen | None:
        """The part that ended the group, if any: a failure before a stop, then the first to end.

        A stop is often the consequence (this console's, after the failure), not the cause.
        """
        ended = [part for part in self.parts if part.job.state in ENDS_THE_GROUP]
        return min(ended, key=_cause_first, default=None)

    def state(self) -> str:
        """Running while any part runs, else how the group ended (exited only if all exited)."""
        if self.live():
            return "running"
        ended = self.ended_it()
        if ended is not None:
            return ended.job.state
        heard = {part.rank for part in self.parts}
        return "exited" if heard == set(range(len(self.hosts))) else "unknown"

    def line(self) -> str:
        """`train across 2 boxes (rdzv r-1a2b): node 0 a running · node 1 b failed (exit 1)`."""
        heard = {part.rank: part for part in self.parts}
        parts = " · ".join(
            _part_text(rank, host, heard.get(rank)) for rank, host in enumerate(self.hosts)
        )
        return f"{self.name} across {len(self.hosts)} boxes (rdzv {self.rdzv_id}): {parts}"


def node_groups(
    jobs_by_host: Mapping[str, Sequence[JobInfo]],
    spans: Mapping[str, Mapping[str, tuple[str, ...]]],
) -> list[NodeGroup]:
    """The launches across boxes among these jobs, newest first; parts matched by rendezvous id.

    `spans[host][job]` is the config's `nodes` for that job on that host. A part counts only
    where the config puts its host at its rank: a box cannot join, or end, another's group by
    claiming its rendezvous id.
    """
    found: dict[tuple[str, str, tuple[str, ...]], list[NodePartSeen]] = {}
    for host, jobs in jobs_by_host.items():
        for job in jobs:
            nodes = spans.get(host, {}).get(job.name, ())
            if _belongs(job, host, nodes) and job.node is not None:
                key = (job.name, job.node.rdzv_id, nodes)
                found.setdefault(key, []).append(NodePartSeen(host, job))
    groups = [
        NodeGroup(name, rdzv_id, nodes, tuple(sorted(parts, key=_rank)))
        for (name, rdzv_id, nodes), parts in found.items()
    ]
    groups.sort(key=lambda group: -max(p.job.started_at or 0.0 for p in group.parts))
    return groups


def group_of(groups: Iterable[NodeGroup], host: str, job_id: str) -> NodeGroup | None:
    """The launch that job `job_id` on `host` is a part of, if it is one."""
    return next(
        (g for g in groups if any(p.host == host and p.job.id == job_id for p in g.parts)), None
    )


def parts_to_stop(groups: Iterable[NodeGroup]) -> list[tuple[NodePartSeen, NodePartSeen]]:
    """(a running part, the part that ended its group) for every part that must be stopped."""
    due = []
    for group in groups:
        ended = group.ended_it()
        if ended is not None:
            due += [(part, ended) for part in group.live() if part.job.state != "stopping"]
    return due


def why_stopped(ended: NodePartSeen) -> str:
    """Why the other parts are being stopped: `node 1 on b failed (exit 1: …)`."""
    job = ended.job
    how = f"exit {job.exit_code}" if job.exit_code is not None else job.exit_signal or ""
    reason = f": {job.exit_reason}" if job.exit_reason else ""
    detail = f" ({how}{reason})" if how or reason else ""
    return f"node {ended.rank} on {ended.host} {job.state}{detail}"


def _belongs(job: JobInfo, host: str, nodes: tuple[str, ...]) -> bool:
    node = job.node
    return (
        node is not None and node.nnodes == len(nodes) and 0 <= node.rank < len(nodes)
        and nodes[node.rank] == host
    )  # fmt: skip


def _cause_first(part: NodePartSeen) -> tuple[int, float]:
    return ENDS_THE_GROUP.index(part.job.state), part.job.ended_at or float("inf")


def _rank(part: NodePartSeen) -> int:
    return part.rank


def _part_text(rank: int, host: str, part: NodePartSeen | None) -> str:
    if part is None:
        return f"node {rank} {host} not heard from"
    job = part.job
    code = f" (exit {job.exit_code})" if job.exit_code not in (None, 0) else ""
    return f"node {rank} {host} {job.state}{code}"
