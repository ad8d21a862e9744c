"""The demo's signals: a closed terminal, Ctrl+C or SIGTERM stop it, and never stop its teardown.

The first SIGHUP, SIGINT or SIGTERM interrupts whatever runs: the console is asked to exit (it
puts the terminal back), the start-up is interrupted by raising. A second one while the console
still runs raises. From then on, and during the teardown, a signal only sets `hurry`: the
teardown stops waiting for polite exits and kills what is left, but it always finishes. Raising
at most once is what makes this safe: no signal can land in the `finally` that starts the
teardown and skip it.

A console asked to exit that has not within STUCK_AFTER_S (its writer thread blocked on a dead
terminal, its loop never running the exit) is not waited for: the `stuck` callback given with it
runs from a thread of its own, and ends the demo there (the teardown, then the process).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)
STUCK_AFTER_S = 5.0
"""How long a console asked to exit by a signal has before the demo ends without it."""
TERMINAL_SIGNALS = (signal.SIGTSTP, signal.SIGCONT)
"""Job control: the console's to handle while it runs, the defaults' otherwise."""


class DemoInterrupts:
    """Installs the demo's handlers; `tearing_down()` switches them to hurrying the teardown."""

    def __init__(self, stuck_after_s: float = STUCK_AFTER_S) -> None:
        self.stuck_after_s = stuck_after_s
        self.hurry = threading.Event()
        self.received: list[int] = []
        self._raised = False
        self._tearing_down = False
        self._stop_console: Callable[[], None] | None = None
        self._stuck: Callable[[], None] | None = None
        self._console_ended = threading.Event()

    def install(self) -> None:
        """Handle SIGHUP, SIGINT and SIGTERM from now on."""
        for signum in SIGNALS:
            signal.signal(signum, self._on_signal)

    @contextlib.contextmanager
    def console(
        self, stop: Callable[[], None], stuck: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """While the console runs, the first signal calls `stop` (which must not block).

        When the console has not ended `stuck_after_s` after that, `stuck` runs in a thread.

        Textual handles SIGTSTP and SIGCONT (for Ctrl+Z) and leaves its handlers behind: the
        SIGCONT that comes with a hang-up would then make it take the terminal again in the
        middle of the teardown, and raise there. They are put back as they were. (While the
        console runs, a hang-up drops the SIGCONT handler first: taking a dead terminal again
        there deadlocks Textual's writer thread.)
        """
        saved = {signum: signal.getsignal(signum) for signum in TERMINAL_SIGNALS}
        self._stop_console, self._stuck = stop, stuck
        self._console_ended.clear()
        try:
            yield
        finally:
            self._console_ended.set()
            self._stop_console = None
            for signum, handler in saved.items():
                signal.signal(signum, handler)

    def _unless_it_ends(self) -> None:
        """Run `stuck` from a thread if the console has not ended `stuck_after_s` from now."""
        stuck = self._stuck
        if stuck is None:
            return

        def watch() -> None:
            if not self._console_ended.wait(self.stuck_after_s):
                stuck()

        threading.Thread(target=watch, name="demo exit watch", daemon=True).start()

    def tearing_down(self) -> None:
        """The teardown begins: no signal interrupts anything any more."""
        self._tearing_down = True

    @property
    def exit_code(self) -> int:
        """0, or 128 + the first signal's number when a signal ended the demo."""
        return 128 + self.received[0] if self.received else 0

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            # The SIGCONT that comes with a hang-up would make Textual take the dead terminal
            # again (and deadlock its writer thread): the terminal is gone, job control with it.
            signal.signal(signal.SIGCONT, signal.SIG_DFL)
        self.received.append(signum)
        if self._raised or self._tearing_down:
            self.hurry.set()
            return
        stop, self._stop_console = self._stop_console, None
        if stop is not None:
            with contextlib.suppress(RuntimeError):  # no event loop yet, or no more: raise below
                stop()
                self._unless_it_ends()
                return
        self._raised = True
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)
