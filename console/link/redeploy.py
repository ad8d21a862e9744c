"""The one-key fix, asked of the agent: stage the uploads, then hand it the whole redeploy.

The console only uploads the changed files beside their targets (nothing is swapped yet) and
asks once (operations.redeploy); the agent stops, swaps, starts and watches, or rolls back, and
records every step. What the console shows afterwards comes from the agent's record, so a link
lost at any moment changes nothing on the box: `follow_operation` picks the record up again
over a new link. No Textual here: the TUI and the headless commands share it.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import secrets
import time
from collections.abc import Awaitable, Callable

from agent.protocol import (
    FILES_HASH,
    LIVE_JOB_STATES,
    OPERATIONS_LIST,
    OPERATIONS_REDEPLOY,
    FilesHashParams,
    JobInfo,
    OperationInfo,
    OperationsParams,
    RedeployParams,
    Snapshot,
    StagedFile,
)
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.deploy import FilePlan, plan_deploy

FOLLOW_POLL_S = 0.5
RECONNECT_FOR_S = 300.0
"""How long a follower keeps reopening a lost link before it says where to look instead."""


class RedeployError(LinkError):
    """A redeploy could not be asked for; nothing on the box was changed."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"redeploy not started ({step}): {reason}")
        self.step = step


class JobNotFoundError(LinkError):
    """No job, or more than one, answers to the name, id or dataset given."""


async def start_redeploy(
    link: AgentLink, host: HostConfig, job_id: str, argv: tuple[str, ...] | None = None
) -> OperationInfo:
    """Upload what differs and ask the agent for the redeploy; returns its record as it starts."""
    try:
        plans = await plan_deploy(link, host.deploy) if host.deploy else []
        files = await stage_uploads(link, plans)
    except (LinkError, OSError) as exc:
        raise RedeployError("upload", str(exc)) from None
    params = RedeployParams(job_id, argv, files)
    info: OperationInfo = await link.call(
        OPERATIONS_REDEPLOY, params, idempotency_key=f"redeploy-{secrets.token_hex(6)}"
    )
    return info


async def stage_uploads(link: AgentLink, plans: list[FilePlan]) -> tuple[StagedFile, ...]:
    """Each changed or new file, uploaded under a temp name beside its target; none swapped in."""
    if link.files is None:
        raise LinkError("this link cannot move files")
    staged = []
    for plan in plans:
        if not plan.needs_deploy or plan.local is None:
            continue
        content = plan.local.read_bytes()
        folder, name = posixpath.split(plan.remote)
        path = posixpath.join(folder, f".{name}.eagle-upload-{secrets.token_hex(6)}")
        # The agent confines the staging path to the deploy roots before a byte is written.
        await link.call(FILES_HASH, FilesHashParams((path,)))
        await link.files.stage(path, content, plan.mode)
        staged.append(StagedFile(plan.remote, path, hashlib.sha256(content).hexdigest(), plan.mode))
    return tuple(staged)


async def follow_operation(
    link: AgentLink, operation_id: str, report: Callable[[OperationInfo], None],
    reopen: Callable[[], Awaitable[AgentLink]] | None = None,
) -> OperationInfo:  # fmt: skip
    """Report the operation as it changes until it ends; a lost link is reopened with `reopen`.

    Returns the record as it ended. Raises LinkError only when the agent cannot be reached
    again within RECONNECT_FOR_S: the operation goes on there all the same.
    """
    current, seen = link, None
    while True:
        try:
            listing = await current.call(OPERATIONS_LIST, OperationsParams(operation_id))
        except LinkError:
            if reopen is None:
                raise
            current = await _reopened(reopen)
            continue
        info = listing.operations[0]
        if info != seen:
            report(info)
            seen = info
        if info.ended:
            if current is not link:
                await current.close()
            return info
        await asyncio.sleep(FOLLOW_POLL_S)


async def _reopened(reopen: Callable[[], Awaitable[AgentLink]]) -> AgentLink:
    deadline = time.monotonic() + RECONNECT_FOR_S
    while True:
        try:
            return await reopen()
        except LinkError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(2.0)


def find_job(snapshot: Snapshot, job_ref: str) -> JobInfo:
    """The job with this id; or the one live job with this name, or writing this dataset.

    `inference/B3_math` names the `inference` job on dataset B3_math. When no job of that line
    is live, its latest run is named (a redeploy then starts it again on the new code).
    """
    name, _, dataset = job_ref.partition("/")
    own = [job for job in snapshot.jobs if not job.external]
    live = [job for job in own if job.state in LIVE_JOB_STATES]
    by_id = [job for job in own if job.id == job_ref]
    by_name = [job for job in live if job.name == name and (not dataset or job.dataset == dataset)]
    by_dataset = [job for job in live if job.dataset == job_ref]
    found = by_id or by_name or by_dataset or _latest_ended(own, job_ref)
    if len(found) != 1:
        names = (
            ", ".join(sorted({f"{j.name} ({j.id}, {j.state})" for j in snapshot.jobs})) or "none"
        )
        what = "no" if not found else "more than one running"
        raise JobNotFoundError(f"{what} job {job_ref!r} on the box; its jobs: {names}")
    return found[0]


def _latest_ended(jobs: list[JobInfo], job_ref: str) -> list[JobInfo]:
    """The newest run of the one line `job_ref` names (NAME, NAME/DATASET or DATASET), if one."""
    name, _, dataset = job_ref.partition("/")
    line = [
        job for job in jobs
        if (job.name == name and (not dataset or job.dataset == dataset))
        or (not dataset and job.dataset == job_ref)
    ]  # fmt: skip
    if len({(job.name, job.dataset) for job in line}) != 1:
        return []
    return [max(line, key=lambda job: (job.started_at or 0.0, job.id))]


def step_lines(before: OperationInfo | None, now: OperationInfo) -> list[str]:
    """What changed in an operation since `before`, one line per step, then its end."""
    old = {(s.name, s.state, s.detail) for s in (before.steps if before else ())}
    lines = [
        f"{step.name}: {step.state}" + (f": {step.detail}" if step.detail else "")
        for step in now.steps
        if (step.name, step.state, step.detail) not in old
    ]
    if now.ended and not (before and before.ended):
        lines.append(f"{now.kind} {now.state.replace('_', ' ')}: {now.outcome}")
    return lines
