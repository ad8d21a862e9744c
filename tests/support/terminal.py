"""A program on a pseudo-terminal of its own, as in a terminal window: keys in, bytes out, hang-up.

The program leads a new session whose controlling terminal is the pty's slave end, so closing
the master end is what closing a terminal window does: the kernel hangs the terminal up and
sends SIGHUP to the session. Every byte the program writes is kept, so a test can wait for a
marker (never for a guessed time) and look for control sequences that reached the terminal.
The tests and the fault scenarios share it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from agent.host.signals import kill_group
from console.model.safe_text import sanitise

READ_SIZE = 65536
POLL_S = 0.05
EXIT_WAIT_S = 5.0
"""How long a program that closed its terminal gets to be reaped, for its exit code."""
LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"
CONTROL_SEQUENCE = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")


class MarkerNotSeenError(AssertionError):
    """The program never wrote what a test waited for."""


class PtyTerminal:
    """One program on one pty; its output is read into `output` by a thread as it comes."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        rows: int = 50,
        columns: int = 200,
        cwd: Path | None = None,
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        term_env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
        self.process = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
            env=term_env | {"TERM": "xterm-256color"}, start_new_session=True,
            preexec_fn=_take_terminal,  # the controlling terminal can only be taken in the child
        )  # fmt: skip
        os.close(slave)
        self.master: int | None = master
        self.output = bytearray()
        self._changed = threading.Condition()
        self._hang_up = False
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, name="pty reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The program's pid (it leads its session and its process group)."""
        return self.process.pid

    def text(self) -> str:
        """Everything written so far, decoded leniently (for failure messages and searches)."""
        with self._changed:
            return bytes(self.output).decode(errors="replace")

    def wait_for(self, pattern: bytes, timeout_s: float, after: int = 0) -> int:
        """Wait until the output from byte `after` on matches regex `pattern`; returns its end."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while (found := regex.search(self.output, after)) is None:
                if self.master is None:
                    raise MarkerNotSeenError(self._ended_before(pattern))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MarkerNotSeenError(
                        f"never saw {pattern!r} within {timeout_s:g} s; the terminal shows:\n"
                        + _tail(self.output)
                    )
                self._changed.wait(min(left, 0.5))
            return found.end()

    def _ended_before(self, pattern: bytes) -> str:
        """The program closed the terminal first: its exit, and what it wrote after its screen
        (a Textual app prints its traceback there, once it has left the alternate screen)."""
        code = self.wait_exit(EXIT_WAIT_S)
        ended = "still running" if code is None else f"exit code {code}"
        last = self.output.rfind(LEAVE_ALTERNATE_SCREEN)
        after = self.output[last + len(LEAVE_ALTERNATE_SCREEN) :] if last >= 0 else self.output
        words = " ".join(CONTROL_SEQUENCE.sub(b"", after).decode(errors="replace").split())
        return (
            f"the program closed the terminal ({ended}) before writing {pattern!r}; "
            f"its last words: {sanitise(words[-600:])}"
        )

    def send(self, keys: bytes) -> None:
        """Type `keys` (raw bytes: b"q", b"\\r" for enter, b"\\x1b[B" for down...)."""
        assert self.master is not None, "the terminal is closed"
        os.write(self.master, keys)

    def hang_up(self) -> None:
        """Close the terminal, as closing its window does (the reader thread owns the fd)."""
        with self._changed:
            self._hang_up = True
        self._closed.wait(timeout=10)

    def wait_exit(self, timeout_s: float) -> int | None:
        """The program's exit status, or None if it is still running after `timeout_s`."""
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Hang up and make sure the program is gone (SIGKILL to its group after 30 s)."""
        self.hang_up()
        if self.wait_exit(30) is None:
            with contextlib.suppress(ProcessLookupError):
                kill_group(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self._reader.join(timeout=10)

    def _read(self) -> None:
        """Read until hung up; only this thread closes the master, so its fd is never reused."""
        master = self.master
        assert master is not None
        try:
            while not self._hang_up:
                if not select.select([master], [], [], POLL_S)[0]:
                    continue
                try:
                    chunk = os.read(master, READ_SIZE)
                except OSError:  # EIO: every slave end is closed
                    chunk = b""
                with self._changed:
                    self.output += chunk
                    self._changed.notify_all()
                if not chunk:
                    return
        finally:
            with self._changed:
                self.master = None
                self._changed.notify_all()
            os.close(master)
            self._closed.set()


def _take_terminal() -> None:
    """In the child, after setsid: make the pty (its stdin) the session's controlling terminal.

    A terminal window starts its program with the default hang-up and interrupt actions, whatever
    started the tests (`nohup` ignores SIGHUP, a shell's background job SIGINT): reset them.
    """
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    for signum in (signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


def _tail(output: bytearray, size: int = 3000) -> str:
    return bytes(output[-size:]).decode(errors="replace")
