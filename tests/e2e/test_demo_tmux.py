"""`eagle-console demo` driven as a person would: in tmux, by keys, reading the screen.

tmux runs the demo on a private server socket; the test sends keys with `send-keys` and reads the
screen with `capture-pane` until the datasets show progress, presses R on the dataset heading
past its budget, confirms, and waits for the toast that says the agent's redeploy is done (the
demo's autopilot runs meanwhile, and leaves a dataset under a redeploy alone). Quitting must
leave nothing of the demo running.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.host.procfs import all_pids, command_line
from agent.host.signals import kill_process
from console.demo.config_file import OLD_RUN_BUDGET

SCREEN_TIMEOUT_S = 150.0
PROGRESS = re.compile(r"B1_sharegpt\s+([1-9]\d*) / \d+")

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Tmux:
    """One tmux server on its own socket, with one window running one command."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        """A tmux command against this server; its stdout."""
        # pytest sets COLUMNS and LINES, which Textual would take over the pane's real size.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True, env=env
        )
        return done.stdout

    def screen(self) -> str:
        """What the pane shows now."""
        return self.run("capture-pane", "-p", "-t", "demo")

    def keys(self, *keys: str) -> None:
        """Press keys, as tmux names them."""
        self.run("send-keys", "-t", "demo", *keys)

    def wait_exit(self, exited: Path, timeout_s: float = SCREEN_TIMEOUT_S) -> str:
        """The exit status the window's shell wrote to `exited`, once the window has closed.

        The shell writes the status, then ends, and the tmux server with it. Both name the
        workspace in their command lines: a look for the demo's leftovers made as the file
        appeared found these two, still ending.
        """
        deadline = time.monotonic() + timeout_s
        while not exited.exists():
            assert time.monotonic() < deadline, f"the program did not exit:\n{self.screen()}"
            time.sleep(0.2)
        while harness := demo_processes(exited):  # the processes that name the status file
            assert time.monotonic() < deadline, f"the window did not close: {harness}"
            time.sleep(0.2)
        return exited.read_text().strip()

    def wait_for(self, found: Callable[[str], bool], what: str) -> str:
        """The screen once `found` holds; fails with the last screen after SCREEN_TIMEOUT_S."""
        deadline = time.monotonic() + SCREEN_TIMEOUT_S
        screen = self.screen()
        while not found(screen):
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never showed {what}; it shows:\n{screen}")
            time.sleep(0.2)
            screen = self.screen()
        return screen


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux(f"eagle-test-{secrets.token_hex(4)}")
    try:
        yield server
    finally:
        subprocess.run(
            ["tmux", "-L", server.socket, "kill-server"], capture_output=True, check=False
        )
        end_leftovers(tmp_path)  # a failed test must not leave the demo's processes behind


def end_leftovers(workspace: Path) -> None:
    """Give the demo's own teardown (it handles the hang-up) its chance, then SIGKILL the rest."""
    deadline = time.monotonic() + 30
    while demo_processes(workspace) and time.monotonic() < deadline:
        time.sleep(0.2)
    for line in demo_processes(workspace):
        with contextlib.suppress(ProcessLookupError):
            kill_process(int(line.split(":")[0]), signal.SIGKILL)


def command_field(screen: str) -> str:
    """The modal's command as its field shows it: the text between the field's tall borders
    (▊ and ▎) on each line, the wrapped lines joined again by spaces."""
    rows = [line.split("▊", 1)[1].rsplit("▎", 1)[0].strip()
            for line in screen.splitlines() if "▊" in line and "▎" in line]  # fmt: skip
    return " ".join(row for row in rows if row.strip("▔▁"))


def demo_processes(workspace: Path) -> list[str]:
    """Command lines of live processes that belong to the demo in `workspace`."""
    found = []
    for pid in all_pids():
        line = " ".join(command_line(pid))
        if str(workspace) in line and pid != os.getpid():
            found.append(f"{pid}: {line}")
    return found


@pytest.mark.timeout(600)
@pytest.mark.parametrize("flags", ["", "--ssh"], ids=["local", "ssh"])
@pytest.mark.slow
def test_the_demo_shows_progress_and_r_redeploys_the_run_heading_over_budget(
    tmp_path: Path, tmux: Tmux, flags: str
) -> None:
    workspace = tmp_path / "demo"
    console = Path(sys.executable).parent / "eagle-console"
    exited = tmp_path / "exited"
    command = f"{console} demo {flags} --dir {workspace} --keep; echo $? > {exited}"
    tmux.run("new-session", "-d", "-s", "demo", "-x", "200", "-y", "50", command)

    tmux.wait_for(lambda s: PROGRESS.search(s) is not None, "progress on B1_sharegpt")
    tmux.wait_for(lambda s: "B3_math" in s and "restart it with --token-budget" in s,
                  "the projected-overrun alert on B3_math")  # fmt: skip

    tmux.keys("Down", "Down")  # the datasets table has the focus; B3_math is the third row
    tmux.keys("R")
    suggested = f"--token-budget {OLD_RUN_BUDGET}"  # the run heads past its budget
    modal = tmux.wait_for(
        lambda s: "Kill, deploy and restart" in s and command_field(s).endswith(suggested),
        "the redeploy modal, its whole command ending with the suggested budget",
    )
    assert "inference-old" in modal
    assert "B3_math" in modal
    tmux.keys("Tab", "Enter")  # Cancel has the focus; Tab moves to "Kill, deploy, restart"
    tmux.wait_for(lambda s: "redeploy done" in s, "the toast saying the agent's redeploy is done")

    remote = workspace / "remote" / "run_inference.py"
    assert remote.read_text() == (workspace / "local" / "run_inference.py").read_text()
    argvs = [p.read_text() for p in (workspace / "agent-state" / "jobs").glob("*B3_math*/job.json")]
    assert len(argvs) == 2
    assert sum("--token-budget" in argv for argv in argvs) == 1

    tmux.keys("q")
    assert tmux.wait_exit(exited) == "0"
    assert demo_processes(workspace) == []
