"""The demo's `q`: from the key to the terminal given back, with nothing of the demo left running.
Goal (issue: demo): < 3 s. Each round starts the demo on a pty of its own, as a terminal would.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.demo_terminal import (
    CONSOLE_UP,
    START_TIMEOUT_S,
    demo_processes,
    kill_leftovers,
    start_demo,
)

ROUNDS = 5
GOAL_S = 3.0


def quit_once(workspace: Path) -> float:
    """Seconds from `q` to the demo's exit, once its console is up."""
    terminal = start_demo(workspace)
    try:
        terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
        pressed = time.monotonic()
        terminal.send(b"q")
        code = terminal.wait_exit(60)
        took_s = time.monotonic() - pressed
        if code != 0 or demo_processes(workspace):
            raise RuntimeError(f"the demo ended with {code} or left processes behind")
        return took_s
    finally:
        terminal.close()
        kill_leftovers(workspace)


def run() -> None:
    times = []
    for _ in range(ROUNDS):
        folder = Path(tempfile.mkdtemp(prefix="bench-demo-quit-"))
        try:
            times.append(quit_once(folder / "demo"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print(
        f"q to the terminal back, {ROUNDS} rounds: median {statistics.median(times):.2f} s, "
        f"max {max(times):.2f} s (goal < {GOAL_S:.0f} s)"
    )
