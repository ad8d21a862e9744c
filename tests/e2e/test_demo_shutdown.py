"""The demo gives the terminal back quickly and leaves nothing running, however it is ended.

`eagle-console demo` runs on a pty of its own, as in a terminal window; phases are told by what
it writes (never by waiting a guessed time). A hang-up at each phase is the `demo_hangup` fault
scenario (its short version runs in tests/test_fault_campaign.py).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from tests.support.demo_terminal import (
    ALTERNATE_SCREEN,
    CONSOLE_UP,
    START_TIMEOUT_S,
    TEARING_DOWN,
    TORN_DOWN,
    demo_processes,
    start_demo,
)
from tests.support.terminal import PtyTerminal

QUIT_NEVER_WAITS_S = 15.0
"""`q` cancels the demo's runs, never drains them: a drain may wait out a run's grace (15 s in the
demo's config). The goal itself, the terminal back within 3 s, is a speed goal and a loaded machine
misses it by chance, so benchmarks/bench_demo_quit.py measures it; this bound tells a cancel from a
wait."""
HURRIED = rb"a signal cut the teardown short"


@contextmanager
def demo_on_screen(workspace: Path, *flags: str) -> Iterator[PtyTerminal]:
    """The demo run with `flags` in `workspace`, once its console is up; its terminal closed after."""
    with closing(start_demo(workspace, *flags)) as terminal:
        terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
        yield terminal


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_q_gives_the_terminal_back_without_draining_and_leaves_nothing(workspace: Path) -> None:
    with demo_on_screen(workspace) as terminal:
        quit_at = time.monotonic()
        terminal.send(b"q")
        code = terminal.wait_exit(60)
        took_s = time.monotonic() - quit_at
        assert code == 0, terminal.text()[-2000:]
        assert took_s < QUIT_NEVER_WAITS_S, f"q took {took_s:.2f} s: it waited for the runs"
        assert demo_processes(workspace) == []
        assert TORN_DOWN.decode() in terminal.text()


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_ctrl_c_twice_during_the_teardown_finishes_it(workspace: Path) -> None:
    with demo_on_screen(workspace, "--keep") as terminal:
        quit_from = len(terminal.output)
        terminal.send(b"q")
        terminal.wait_for(TEARING_DOWN, 60, after=quit_from)
        terminal.send(b"\x03")  # the console gave the terminal back: Ctrl+C is SIGINT again
        terminal.send(b"\x03")
        code = terminal.wait_exit(60)
        output = bytes(terminal.output[quit_from:])
        assert code == 130, terminal.text()[-2000:]
        assert demo_processes(workspace) == []
        hurried, done = output.find(HURRIED), output.find(TORN_DOWN)
        assert 0 <= hurried < done, "the signals did not land in the teardown, or it was abandoned"
        assert (workspace / "agent-state").is_dir()  # --keep kept it: the teardown went on to it


@pytest.mark.timeout(400)
@pytest.mark.slow
def test_sigterm_while_the_console_runs_puts_the_terminal_back_first(workspace: Path) -> None:
    with demo_on_screen(workspace) as terminal:
        assert ALTERNATE_SCREEN in terminal.output
        shown_from = len(terminal.output)
        terminal.process.terminate()
        code = terminal.wait_exit(60)
        after = bytes(terminal.output[shown_from:])
        assert code == 143, terminal.text()[-2000:]
        assert b"\x1b[?1049l" in after.split(TEARING_DOWN)[0]  # the alternate screen was left
        assert TORN_DOWN in after
        assert demo_processes(workspace) == []


@pytest.mark.timeout(120)
def test_the_console_itself_ends_when_its_terminal_is_closed(tmp_path: Path) -> None:
    config = tmp_path / "eagle-console.toml"
    config.write_text('[hosts.gpu]\nssh = "nobody@127.0.0.1:1"\n[hosts.gpu.datasets]\nroot = "/"\n')
    console = Path(sys.executable).parent / "eagle-console"
    with closing(
        PtyTerminal([str(console), "--config", str(config), "gpu"], dict(os.environ))
    ) as terminal:
        terminal.wait_for(re.escape(ALTERNATE_SCREEN), 60)  # up, reconnecting to nowhere
        terminal.hang_up()
        assert terminal.wait_exit(10) is not None, "the console outlived its terminal"
