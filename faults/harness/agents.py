"""What the stop-escalation, host-key and injection scenarios share.

A local agent that is always stopped afterwards, its jobs' process groups killed; a private HOME;
waiting on conditions with a deadline.

Nothing here injects a fault or checks an invariant; it only starts and cleans up real parts the
way `tests/conftest.py` does for the tests (which scenarios cannot use: they get no fixtures).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

from agent.attach import stop_daemon
from agent.host.procfs import is_same_process
from agent.host.signals import kill_group
from agent.protocol import (
    JOBS_LIST,
    JOBS_STOP,
    JobInfo,
    JobsList,
    JobsParams,
    PipelineConfig,
    StopParams,
    StopResult,
)
from agent.state import StatePaths
from console.link.agent_link import AgentLink, LinkError
from console.link.local_link import open_local_link
from faults.result import ScenarioResult

POLL_S = 0.02


async def wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `check` every POLL_S until it holds (True) or `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True


async def wait_until_async(check: Callable[[], Awaitable[bool]], timeout_s: float) -> bool:
    """`wait_until` for a check that has to ask the agent."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(POLL_S * 2)
    return True


async def request_stop(
    link: AgentLink, job_id: str, key: str, result: ScenarioResult, name: str
) -> StopResult | None:
    """`jobs.stop`, counted as attempted and, if answered, acknowledged; a failure is a violation."""
    result.attempted += 1
    try:
        stopped: StopResult = await link.call(JOBS_STOP, StopParams(job_id), idempotency_key=key)
    except LinkError as exc:
        result.violate(f"{name}: jobs.stop failed: {exc}")
        return None
    result.acknowledged += 1
    return stopped


async def job_states(link: AgentLink) -> dict[str, JobInfo]:
    """Every job the agent lists, by id."""
    listing: JobsList = await link.call(JOBS_LIST, JobsParams())
    return {job.id: job for job in listing.jobs}


def kill_leftover_jobs(state_dir: Path) -> None:
    """SIGKILL the process group of every job still running (checked by start time first)."""
    for shim_file in state_dir.glob("jobs/*/shim.json"):
        with contextlib.suppress(ValueError, KeyError, OSError):
            record = json.loads(shim_file.read_text())
            if is_same_process(int(record["pid"]), int(record["start_ticks"])):
                kill_group(int(record["pid"]), signal.SIGKILL)


async def shut_down_agent(state_dir: Path) -> None:
    """Stop the daemon of `state_dir` and kill whatever its jobs left running."""
    if state_dir.exists():
        with contextlib.suppress(Exception):  # cleanup goes on whatever the daemon does
            await asyncio.to_thread(stop_daemon, StatePaths(state_dir))
        await asyncio.to_thread(kill_leftover_jobs, state_dir)


@contextlib.asynccontextmanager
async def local_agent(state_dir: Path, pipeline: PipelineConfig) -> AsyncIterator[AgentLink]:
    """A real agent daemon for `state_dir` behind `attach`; stopped, jobs and all, afterwards."""
    try:
        link = await open_local_link(state_dir, pipeline)
        try:
            yield link
        finally:
            await link.close()
    finally:
        await shut_down_agent(state_dir)


@contextlib.contextmanager
def private_home(home: Path) -> Iterator[Path]:
    """HOME pointed at an empty folder, no ssh-agent, no XDG config; the old values come back."""
    home.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in ("HOME", "SSH_AUTH_SOCK", "XDG_CONFIG_HOME")}
    os.environ["HOME"] = str(home)
    os.environ.pop("SSH_AUTH_SOCK", None)
    os.environ.pop("XDG_CONFIG_HOME", None)
    try:
        yield home
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def resident_mb(pid: int | None) -> float:
    """A process's resident memory in MB (0 when it cannot be read)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def watch_peak_mb(process: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Wait for `process` to end (killed past `timeout_s`); its peak resident memory in MB.

    VmHWM is read from /proc as it runs: the peak, so a late read loses nothing.
    """
    peak = 0.0
    status_file = Path(f"/proc/{process.pid}/status")
    deadline = time.monotonic() + timeout_s
    while process.poll() is None and time.monotonic() < deadline:
        try:
            line = next(x for x in status_file.read_text().splitlines() if x.startswith("VmHWM"))
            peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, StopIteration, ValueError):
            pass
        threading.Event().wait(0.02)
    if process.poll() is None:
        process.kill()
        process.wait()
    return peak
