"""A canary process for the pid-reuse checks: it writes down every catchable signal it gets.

It leads its own session and group, as a recycled job pid would. SIGKILL and SIGSTOP cannot be
caught, so `alive()` checks those: a canary that was killed or stopped has been signalled too.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from agent.host.procfs import process_info, start_ticks
from agent.jobs.registry import CHILD_FILE, EXIT_FILE, SHIM_FILE, JobFiles
from agent.protocol import LIVE_JOB_STATES, JobInfo, StopResult
from console.link.agent_link import AgentLink
from faults.harness.agents import request_stop
from faults.result import ScenarioResult
from tests.support.waits import wait_until

READY_TIMEOUT_S = 15.0
SETTLE_S = 0.2
"""After the stop: a signal sent would have reached the canary's handler by then (absence of a
signal has no event to wait on)."""
CANARY = """
import os, signal, sys, time
log, ready = sys.argv[1], sys.argv[2]
def record(signum, frame):
    with open(log, "a") as handle:
        handle.write(f"{signal.Signals(signum).name}\\n")
for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
               signal.SIGQUIT, signal.SIGALRM, signal.SIGCONT, signal.SIGPIPE):
    signal.signal(signum, record)
open(ready, "w").close()
while True:
    time.sleep(60)
"""


@dataclass(frozen=True, slots=True)
class Canary:
    """A running canary and where it writes the signals it received."""

    pid: int
    start_ticks: int
    log: Path

    def signals(self) -> list[str]:
        """The names of the signals it caught, in order."""
        return self.log.read_text().split() if self.log.exists() else []

    def alive(self) -> bool:
        """Still the same process, neither dead, zombie nor stopped."""
        info = process_info(self.pid)
        return info is not None and info.start_ticks == self.start_ticks and info.state in "RSD"


@contextlib.asynccontextmanager
async def running_canary(folder: Path) -> AsyncIterator[Canary]:
    """Start a canary in its own session, wait until its handlers are in place; kill it after."""
    folder.mkdir(parents=True, exist_ok=True)
    log, ready = folder / "signals", folder / "ready"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CANARY, str(log), str(ready), start_new_session=True
    )
    try:
        if not await wait_until(ready.exists, READY_TIMEOUT_S):
            raise RuntimeError(f"the canary in {folder} never installed its handlers")
        ticks = start_ticks(process.pid)
        if ticks is None:
            raise RuntimeError(f"the canary in {folder} died at start")
        yield Canary(process.pid, ticks, log)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def stop_with_canary(
    link: AgentLink, job: JobInfo, folder: Path, result: ScenarioResult, name: str, *,
    finished: bool,
) -> int:  # fmt: skip
    """Point the job's records at a fresh canary, stop the job, check; returns signals received."""
    name = f"{name}, canary"
    async with running_canary(folder) as canary:
        _point_records_at(JobFiles(Path(str(job.log_path)).parent), canary, finished=finished)
        stopped = await request_stop(link, job.id, f"canary-stop-{job.id}", result, name)
        await asyncio.sleep(SETTLE_S)
        return _check_canary(canary, stopped, result, name)


def _point_records_at(files: JobFiles, canary: Canary, *, finished: bool) -> None:
    """As if the job's pid were recycled: the canary's pid with a start time it does not have."""
    recycled = {"pid": canary.pid, "start_ticks": canary.start_ticks - 1}
    files.write(SHIM_FILE, recycled)
    if finished:  # as the existing pid-reuse test does: the job looks as if still running
        files.write(CHILD_FILE, recycled)
        (files.folder / EXIT_FILE).unlink()


def _check_canary(
    canary: Canary, stopped: StopResult | None, result: ScenarioResult, name: str
) -> int:
    received = canary.signals()
    if received:
        result.violate(f"{name}: the canary received {received}")
    if not canary.alive():
        result.violate(f"{name}: the canary is dead (SIGKILL or SIGSTOP cannot be recorded)")
    # A job whose pid now belongs to another process is "lost"; one stopped before keeps the
    # stop it had. Either way it must not look alive.
    if stopped is not None and stopped.outcome not in ("lost", "stopped"):
        result.violate(f"{name}: outcome {stopped.outcome}, neither lost nor the earlier stop")
    if stopped is not None and stopped.job.state in LIVE_JOB_STATES:
        result.violate(f"{name}: shown {stopped.job.state} though its pid is another process")
    if stopped is not None and stopped.steps:
        result.violate(f"{name}: the stop sent {[s.action for s in stopped.steps]} to the canary")
    return len(received)
