"""The demo's own mishaps: a runner and the SGLang stand-in each killed once, on purpose.

A real run crashes at 3 a.m.; the demo shows what the box does about it while you watch. A
while after the runs started, one runner is killed with SIGKILL; a while later the server is.
Both jobs have `restart = "on-failure"`, so the agent starts them again by itself and the run
goes on (the runners wait for the server as they wait for one warming up). Each pid comes from
the agent (jobs.list) the moment before the signal; a job not there yet is looked for again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.protocol import JOBS_LIST, JobInfo, JobsParams
from console.link.agent_link import AgentLink, LinkError
from console.link.host_connection import Opener

RUNNER_AFTER_S = 25.0
"""Seconds after the runs start that one runner is killed."""
SERVER_AFTER_S = 55.0
"""Seconds after the runs start that the server is killed."""
LOOK_EVERY_S = 1.0
MAX_LOOKS = 600


@dataclass(frozen=True, slots=True)
class Mishap:
    """One kill: after how long, which job, and the line that says so."""

    after_s: float
    pick: Callable[[tuple[JobInfo, ...]], JobInfo | None]
    said: str


def a_runner(jobs: tuple[JobInfo, ...]) -> JobInfo | None:
    """A running runner of the configured budget (not the old run: that one shows R)."""
    live = [j for j in jobs if j.name == "inference" and j.state == "running" and j.pid]
    return live[0] if live else None


def the_server(jobs: tuple[JobInfo, ...]) -> JobInfo | None:
    """The running SGLang stand-in."""
    return next((j for j in jobs if j.kind == "server" and j.state == "running" and j.pid), None)


MISHAPS = (
    Mishap(RUNNER_AFTER_S, a_runner, "the demo killed runner {name} ({dataset}, pid {pid}) "
           "with SIGKILL on purpose: its restart policy brings it back"),
    Mishap(SERVER_AFTER_S, the_server, "the demo killed the SGLang stand-in (pid {pid}) with "
           "SIGKILL on purpose: it restarts, and the runs wait for it"),
)  # fmt: skip


async def misbehave(opener: Opener, tell: Callable[[str], None]) -> None:
    """Play each mishap once, on schedule; a link that fails only skips a look."""
    started = time.monotonic()
    for mishap in MISHAPS:
        await asyncio.sleep(max(0.0, started + mishap.after_s - time.monotonic()))
        for _ in range(MAX_LOOKS):  # a job not running yet (a restart under way): look again
            if await _play(opener, mishap, tell):
                break
            await asyncio.sleep(LOOK_EVERY_S)


async def _play(opener: Opener, mishap: Mishap, tell: Callable[[str], None]) -> bool:
    victim = await _pick(opener, mishap)
    if victim is None or not _kill(victim):
        return False
    tell(mishap.said.format(name=victim.name, dataset=victim.dataset, pid=victim.pid))
    return True


async def _pick(opener: Opener, mishap: Mishap) -> JobInfo | None:
    link: AgentLink | None = None
    try:
        link = await opener()
        listing = await link.call(JOBS_LIST, JobsParams())
        return mishap.pick(listing.jobs)
    except LinkError:
        return None
    finally:
        if link is not None:
            await link.close()


def _kill(job: JobInfo) -> bool:
    """SIGKILL the job's own process (not its shim: the shim records the end)."""
    if job.pid is None or job.pid <= 1 or job.pid == os.getpid():
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(job.pid, signal.SIGKILL)
        return True
    return False
