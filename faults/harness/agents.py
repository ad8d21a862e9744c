"""A real agent for a scenario, and what a scenario reads of it as a process.

A local agent that is always stopped afterwards, its jobs' process groups killed; a private HOME;
the daemon's pid and the tracebacks in its log; a raw connection past hello; the window between a
stop's signal and its record. Nothing here injects a fault; it only starts and cleans up real
parts the way `tests/conftest.py` does for the tests (which scenarios cannot use: they get no
fixtures), and reads them back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

from agent.attach import stop_daemon
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
from agent.state import StatePaths, read_json
from console.link.agent_link import AgentLink, LinkError
from faults.result import ScenarioResult
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.operations import local_link
from tests.support.raw_wire import RawWire, hello
from tests.support.waits import wait_until_blocking


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


async def shut_down_agent(state_dir: Path) -> None:
    """Stop the daemon of `state_dir` and kill whatever its jobs left running."""
    if state_dir.exists():
        with contextlib.suppress(Exception):  # cleanup goes on whatever the daemon does
            await asyncio.to_thread(stop_daemon, StatePaths(state_dir))
        await asyncio.to_thread(kill_leftover_jobs, state_dir)


@contextlib.asynccontextmanager
async def agent_cleanup(state_dir: Path) -> AsyncIterator[None]:
    """On the way out of the block, `shut_down_agent(state_dir)`, whatever the block raised."""
    try:
        yield
    finally:
        await shut_down_agent(state_dir)


@contextlib.asynccontextmanager
async def local_agent(state_dir: Path, pipeline: PipelineConfig) -> AsyncIterator[AgentLink]:
    """A real agent daemon for `state_dir` behind `attach`; stopped, jobs and all, afterwards."""
    async with agent_cleanup(state_dir), local_link(state_dir, pipeline) as link:
        yield link


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


async def greeted_wire(state_dir: Path, result: ScenarioResult) -> RawWire | None:
    """A new raw connection past hello, or None (a violation) if hello is not answered."""
    wire = await RawWire.open(state_dir)
    await wire.send(hello(1))
    _, answer = await wire.answers_until(1)
    if isinstance(answer, dict) and "result" in answer:
        return wire
    result.violate(f"wire: hello was not answered ({answer!r})")
    await wire.close()
    return None


def daemon_pid(state_dir: Path) -> int | None:
    """The running daemon's pid from daemon.json."""
    info = read_json(StatePaths(state_dir).daemon_info)
    return int(info["pid"]) if isinstance(info, dict) and "pid" in info else None


def log_tracebacks(state_dir: Path) -> list[str]:
    """The last line of each traceback in the daemon's log."""
    log = StatePaths(state_dir).daemon_log
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    found, inside = [], False
    for line in lines:
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line.startswith((" ", "During", "The above")):
            found.append(line)
            inside = False
    return found


def catch_stop_recording(
    job: JobInfo, state: Path, timeout_s: float, freeze: Callable[[], None]
) -> str:
    """Freeze the agent once the job's shim recorded its end, before the stop is recorded.

    That is the window between the job dying of the stop's SIGTERM and the agent writing the
    stop's end over the `stop.json` that said it was asked. Blocking (run it in a thread).
    Returns "in the window" when the agent was frozen inside it, "after the stop was recorded" when it came too late (frozen all the
    same), or "" when the job never ended within `timeout_s` (nothing frozen).
    """
    ended = state / "jobs" / job.id / "exit.json"
    if not wait_until_blocking(ended.exists, timeout_s, poll_s=0.001):
        return ""
    freeze()
    record = read_json(ended.with_name("stop.json"))  # "asked" from the first signal on
    recorded = isinstance(record, dict) and record.get("outcome") != "asked"
    return "after the stop was recorded" if recorded else "in the window"
