"""`eagle-console demo` on a terminal of its own, and the processes it leaves, found by workspace.

The demo runs as a user would start it, on a pty (`tests.support.terminal`). Its phases are told apart by
what it writes: its narration lines during start-up and teardown, the alternate screen once the
console is up. Its processes are every process whose command line names the workspace. The
end-to-end tests and the `demo_hangup` fault scenario share it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

from agent.host.procfs import all_pids, command_line, process_info
from agent.host.signals import kill_process
from tests.support.terminal import PtyTerminal
from tests.support.waits import wait_until_blocking

BUILDING = rb"building the workspace"
STARTING = rb"starting the agent, the server and 8 runs"
CONSOLE_UP = rb"B1_sharegpt"
"""A dataset name on the dashboard: the console is up and the runs are running."""
ALTERNATE_SCREEN = b"\x1b[?1049h"
"""Textual switches to it when the console starts."""
TEARING_DOWN = rb"stopping the demo's"
TORN_DOWN = rb"the demo has stopped everything it started"
START_TIMEOUT_S = 240.0


def start_demo(workspace: Path, *flags: str) -> PtyTerminal:
    """`eagle-console demo --dir WORKSPACE FLAGS` on a fresh 200x50 terminal."""
    console = Path(sys.executable).parent / "eagle-console"
    return PtyTerminal([str(console), "demo", "--dir", str(workspace), *flags], dict(os.environ))


def demo_processes(workspace: Path) -> list[str]:
    """`pid: command line` of every live process whose command line names `workspace`."""
    found = []
    for pid in all_pids():
        info = process_info(pid)
        line = " ".join(command_line(pid))
        if info is not None and info.alive and str(workspace) in line and pid != os.getpid():
            found.append(f"{pid}: {line}")
    return found


def job_shims(workspace: Path) -> list[str]:
    """The demo's job shims now running (the agent has started jobs)."""
    return [line for line in demo_processes(workspace) if "agent shim" in line]


def kill_leftovers(workspace: Path) -> None:
    """SIGKILL whatever a failed run left (so one failure does not leak into the next test)."""
    for line in demo_processes(workspace):
        with contextlib.suppress(ProcessLookupError):
            kill_process(int(line.split(":")[0]), signal.SIGKILL)


def end_leftovers(workspace: Path) -> None:
    """Give the demo's own teardown (it handles the hang-up) its chance, then SIGKILL the rest."""
    wait_until_blocking(lambda: not demo_processes(workspace), 30, 0.2)
    kill_leftovers(workspace)
