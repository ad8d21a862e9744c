"""Following what the agent carries out on its own: operations, jobs and the autopilot.

Tests and fault scenarios ask the agent for an operation, may drop the link, and then wait
here for the agent's own record to say how it ended. Each wait polls the agent with a deadline
and fails saying what it last saw; none assumes anything happened by a given time.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from agent.protocol import (
    AUTOPILOT_STATUS,
    JOBS_LIST,
    OPERATIONS_LIST,
    SNAPSHOT,
    SNAPSHOT_WATCH,
    AutopilotStatus,
    AutopilotStatusParams,
    JobInfo,
    JobsParams,
    OperationInfo,
    OperationsParams,
    Snapshot,
    SnapshotParams,
    StagedFile,
    WatchParams,
)
from console.link.agent_link import AgentLink

POLL_S = 0.05


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
    deadline = time.monotonic() + timeout_s
    while True:
        info = await operation(link, operation_id)
        if predicate(info):
            return info
        assert time.monotonic() < deadline, f"operation {operation_id} never got there: {info}"
        await asyncio.sleep(POLL_S)


async def jobs_now(link: AgentLink) -> tuple[JobInfo, ...]:
    """Every job the agent knows, now."""
    listing = await link.call(JOBS_LIST, JobsParams())
    return listing.jobs


async def jobs_where(
    link: AgentLink, predicate: Callable[[tuple[JobInfo, ...]], bool], timeout_s: float = 60.0
) -> tuple[JobInfo, ...]:
    """Wait until the job list satisfies `predicate`; returns it."""
    deadline = time.monotonic() + timeout_s
    while True:
        jobs = await jobs_now(link)
        if predicate(jobs):
            return jobs
        assert time.monotonic() < deadline, f"the jobs never got there: {jobs}"
        await asyncio.sleep(POLL_S)


async def snapshot_where(
    link: AgentLink, predicate: Callable[[Snapshot], bool], timeout_s: float = 90.0
) -> Snapshot:
    """Wait until the agent's snapshot satisfies `predicate`; returns it."""
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        if predicate(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"the snapshot never got there: {snapshot.server}"
        await asyncio.sleep(POLL_S * 4)


async def autopilot_where(
    link: AgentLink, predicate: Callable[[AutopilotStatus], bool], timeout_s: float = 120.0
) -> AutopilotStatus:
    """Wait until the autopilot's status satisfies `predicate`."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = await link.call(AUTOPILOT_STATUS, AutopilotStatusParams())
        if predicate(status):
            return status
        assert time.monotonic() < deadline, f"the autopilot never got there: {status}"
        await asyncio.sleep(POLL_S * 4)


async def text_appears(path: Path, text: str, timeout_s: float = 30.0) -> None:
    """Wait until the file holds `text` (a job's log saying it runs)."""
    deadline = time.monotonic() + timeout_s
    while not (path.is_file() and text in path.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{path} never said {text!r}"
        await asyncio.sleep(POLL_S)


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
