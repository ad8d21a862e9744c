"""tmux as a person's terminal: a server on a socket of its own, keys sent, the screen read.

The demo's end-to-end tests run it in a tmux window and tell each phase by what `capture-pane`
shows, waited for with a deadline.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.demo_terminal import demo_processes
from tests.support.waits import wait_until_blocking

SCREEN_TIMEOUT_S = 150.0


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
        done = wait_until_blocking(exited.exists, timeout_s, 0.2)
        assert done, f"the program did not exit:\n{self.screen()}"
        closed = wait_until_blocking(lambda: not demo_processes(exited), timeout_s, 0.2)
        assert closed, f"the window did not close: {demo_processes(exited)}"
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


@contextlib.contextmanager
def tmux_server() -> Iterator[Tmux]:
    """A tmux server on a socket of its own, ended (with what runs in it) afterwards."""
    server = Tmux(f"eagle-test-{secrets.token_hex(4)}")
    try:
        yield server
    finally:
        subprocess.run(
            ["tmux", "-L", server.socket, "kill-server"], capture_output=True, check=False
        )
