"""Following what the agent carries out on its own: operations, jobs and the autopilot.

Tests and fault scenarios ask the agent for an operation, may drop the link, and then wait
here for the agent's own record to say how it ended. Each wait polls the agent with a deadline
and fails saying what it last saw; none assumes anything happened by a given time.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from agent.protocol import (
    AUTOPILOT_STATUS,
    EVENTS_LIST,
    JOBS_LIST,
    OPERATIONS_LIST,
    SNAPSHOT,
    SNAPSHOT_WATCH,
    AutopilotStatus,
    AutopilotStatusParams,
    EventsParams,
    JobInfo,
    JobsParams,
    OperationInfo,
    OperationsParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StagedFile,
    WatchParams,
)
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.waits import read_until, wait_until

POLL_S = 0.05


@asynccontextmanager
async def local_link(
    state_dir: Path, pipeline: PipelineConfig | None, python: str = sys.executable
) -> AsyncIterator[AgentLink]:
    """A link to the agent of `state_dir` (started if none runs), closed when the block ends;
    the agent itself goes on running."""
    async with closed_after(await open_local_link(state_dir, pipeline, python)) as link:
        yield link


@asynccontextmanager
async def closed_after(link: AgentLink) -> AsyncIterator[AgentLink]:
    """`link`, closed when the block ends."""
    try:
        yield link
    finally:
        await link.close()


def stage_upload(target: Path, content: bytes, mode: int = 0o644) -> StagedFile:
    """Write `content` where a console's upload for `target` would be staged."""
    staged = target.with_name(f".{target.name}.eagle-upload-{secrets.token_hex(6)}")
    staged.write_bytes(content)
    staged.chmod(mode)
    return StagedFile(str(target), str(staged), hashlib.sha256(content).hexdigest(), mode)


async def operation(link: AgentLink, operation_id: str) -> OperationInfo:
    """The agent's record of one operation, now."""
    listing = await link.call(OPERATIONS_LIST, OperationsParams(operation_id))
    return listing.operations[0]


async def operation_ended(
    link: AgentLink, operation_id: str, timeout_s: float = 60.0
) -> OperationInfo:
    """Wait until the operation ends; returns its record."""
    return await operation_where(link, operation_id, lambda info: info.ended, timeout_s)


async def operation_where(
    link: AgentLink, operation_id: str, predicate: Callable[[OperationInfo], bool],
    timeout_s: float = 60.0,
) -> OperationInfo:  # fmt: skip
    """Wait until the operation's record satisfies `predicate`."""
    return await read_until(
        lambda: operation(link, operation_id),
        predicate,
        f"operation {operation_id}",
        timeout_s,
        POLL_S,
    )


async def jobs_now(link: AgentLink) -> tuple[JobInfo, ...]:
    """Every job the agent knows, now."""
    listing = await link.call(JOBS_LIST, JobsParams())
    return listing.jobs


async def jobs_where(
    link: AgentLink, predicate: Callable[[tuple[JobInfo, ...]], bool], timeout_s: float = 60.0
) -> tuple[JobInfo, ...]:
    """Wait until the job list satisfies `predicate`; returns it."""
    return await read_until(lambda: jobs_now(link), predicate, "the jobs", timeout_s, POLL_S)


async def wait_for_job(
    link: AgentLink, job_id: str, states: set[str], timeout_s: float = 20
) -> JobInfo:
    """Wait until the job is in one of `states`; returns it."""

    def state(jobs: tuple[JobInfo, ...]) -> str | None:
        return next((job.state for job in jobs if job.id == job_id), None)

    jobs = await jobs_where(link, lambda jobs: state(jobs) in states, timeout_s)
    return next(job for job in jobs if job.id == job_id)


async def snapshot_where(
    link: AgentLink, predicate: Callable[[Snapshot], bool], timeout_s: float = 90.0
) -> Snapshot:
    """Wait until the agent's snapshot satisfies `predicate`; returns it."""
    snapshot = await read_until(
        lambda: link.call(SNAPSHOT, SnapshotParams()),
        predicate,
        "the snapshot",
        timeout_s,
        POLL_S * 4,
    )
    return snapshot


async def autopilot_where(
    link: AgentLink, predicate: Callable[[AutopilotStatus], bool], timeout_s: float = 120.0
) -> AutopilotStatus:
    """Wait until the autopilot's status satisfies `predicate`."""
    status = await read_until(
        lambda: link.call(AUTOPILOT_STATUS, AutopilotStatusParams()), predicate, "the autopilot",
        timeout_s, POLL_S * 4,
    )  # fmt: skip
    return status


async def text_appears(path: Path, text: str, timeout_s: float = 30.0) -> None:
    """Wait until the file holds `text` (a job's log saying it runs)."""
    said = await wait_until(
        lambda: path.is_file() and text in path.read_text(errors="replace"), timeout_s, POLL_S
    )
    assert said, f"{path} never said {text!r}"


async def observer_scans(link: AgentLink, count: int, timeout_s: float = 30.0) -> None:
    """Wait until the agent's observer has taken `count` more snapshots (and its listeners,
    the restart policy among them, have heard all but the last): a negative claim ("it was
    not restarted") is then checked after the agent had every chance to act."""
    await link.call(SNAPSHOT_WATCH, WatchParams(0.1))
    seen = 0
    deadline = time.monotonic() + timeout_s
    while seen < count + 1:
        left = deadline - time.monotonic()
        assert left > 0, f"only {seen} snapshots came in {timeout_s:g} s"
        event = await asyncio.wait_for(link.events.get(), left)
        seen += event.event == "snapshot"


async def events_of(link: AgentLink, kind: str) -> list[str]:
    """The messages of the agent's timeline events of one kind."""
    found = await link.call(EVENTS_LIST, EventsParams())
    return [event.message for event in found.events if event.kind == kind]


async def alerts_of(link: AgentLink, kind: str) -> list[str]:
    """The subjects of the current snapshot's alerts of one kind."""
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    return [alert.subject for alert in snapshot.alerts if alert.kind == kind]
