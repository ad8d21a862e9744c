"""The demo's own processes, found by what they run in its workspace, and ended without waiting.

The teardown cannot trust what the demo remembers: a hang-up may come between starting a process
and noting it down, and the agent daemon starts the jobs. So it looks: every process that runs
`-m agent ...` on the workspace's agent state (daemon, bridges, job shims, a fork not yet exec'd),
`-m console.link.loopback_ssh` on its SSH folder, or the tokenizer builder on its tokenizer folder.
A job's shim leads the job's process group: the group gets SIGKILL at once (the demo's data is
disposable, so runs are cancelled, not drained). The rest get SIGTERM, then SIGKILL after
TERM_WAIT_S or as soon as the user insists. It scans again until nothing is left, so a process
started while it worked is caught too. Linux only (/proc), like the agent.

A pid is never signalled without checking that it still started when it did (pids are reused).
It reads /proc with the agent's own reader, in agent.protocol (the console may import no other).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import all_pids, command_line, process_info
from console.demo.workspace import Workspace

POLL_S = 0.05
TERM_WAIT_S = 1.0
"""How long a process other than a job has to exit on SIGTERM before SIGKILL."""
KILL_WAIT_S = 5.0
"""How long after that the teardown goes on looking before it names what is left."""


@dataclass(frozen=True, slots=True)
class DemoProcess:
    """One live process of the demo's."""

    pid: int
    start_ticks: int
    pgid: int
    job: bool
    """A job's shim (or a member of its group): the whole group is the job."""


def demo_processes(space: Workspace, job_groups: frozenset[int] = frozenset()) -> list[DemoProcess]:
    """Every live process of the demo in `space`, and every live member of `job_groups`."""
    owned = {"agent": space.state, "console.link.loopback_ssh": space.ssh,
             "agent.simulator.tokenizer": space.tokenizer}  # fmt: skip
    found = []
    for pid in _pids():
        info = process_info(pid)
        if info is None or not info.alive or pid == os.getpid():
            continue
        if info.pgid in job_groups:
            found.append(DemoProcess(pid, info.start_ticks, info.pgid, job=True))
            continue
        argv = command_line(pid)
        module = _module(argv)
        if module in owned and _names(argv, owned[module]):
            job = module == "agent" and "shim" in argv
            found.append(DemoProcess(pid, info.start_ticks, info.pgid, job=job))
    return found


def end_demo_processes(space: Workspace, hurry: threading.Event) -> list[DemoProcess]:
    """End every process of the demo; returns those still alive after the time allowed."""
    started = time.monotonic()
    termed: set[int] = set()
    job_groups: set[int] = set()
    while live := demo_processes(space, frozenset(job_groups)):
        elapsed = time.monotonic() - started
        force = hurry.is_set() or elapsed > TERM_WAIT_S
        for process in live:
            if process.job:
                job_groups.add(process.pgid)
            if process.job or force:
                _signal(process, signal.SIGKILL)
            elif process.pid not in termed:
                _signal(process, signal.SIGTERM)
                termed.add(process.pid)
        if elapsed > TERM_WAIT_S + KILL_WAIT_S:
            return live
        if force:
            time.sleep(POLL_S)
        else:
            hurry.wait(POLL_S)
    return []


def _signal(process: DemoProcess, signum: signal.Signals) -> None:
    """Signal the process (its group, when it leads one that is not ours), if it is still it."""
    info = process_info(process.pid)
    if info is None or info.start_ticks != process.start_ticks:
        return
    leads = process.pgid == process.pid and process.pgid != os.getpgrp()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if leads:
            os.killpg(process.pgid, signum)
        else:
            os.kill(process.pid, signum)


def _pids() -> list[int]:
    try:
        return all_pids()
    except FileNotFoundError:  # no /proc: not Linux
        return []


def _module(argv: list[str]) -> str | None:
    """The module a `python -m MODULE ...` command line runs."""
    with contextlib.suppress(ValueError, IndexError):
        return argv[argv.index("-m") + 1]
    return None


def _names(argv: list[str], folder: Path) -> bool:
    """True if an argument is `folder` or a path inside it."""
    prefix = str(folder)
    return any(arg == prefix or arg.startswith(prefix + os.sep) for arg in argv)
