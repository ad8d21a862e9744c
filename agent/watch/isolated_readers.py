"""Each reader of a file, log or peer kept to itself: its failure is its part's, never the snapshot's.

A snapshot is put together from a dozen readers (training logs and configs, the export's and the
evaluation's reports, /proc, the daemon's own records). Before this, one exception anywhere (an
`int()` of `1e400` in a report, a trainer config's `max_steps: "²"`) lost the whole snapshot, and
with it every listener: the budget guard, the restarts, the autopilot, the alerts, the consoles.
And one slow reader (a regex over 12 KB log lines) held every snapshot for as long as it took.

Here a reader that raises gives its fallback (an empty panel) and a `reader_failed` alert naming it
and what it raised. A reader of files runs `bounded`: on a thread of its own, waited for at most
`deadline_s`; one that is not done by then leaves the snapshot with its last reading and a
`reader_slow` alert, goes on alone, and is not started again until it ends (its result is then
taken). The datasets scan, which the budget guard judges, is the one part not read here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from agent.logs import bounded_reason
from agent.protocol import Alert

log = logging.getLogger(__name__)

T = TypeVar("T")

READER_DEADLINE_S = 2.0
"""How long a snapshot waits for one reader of files: the rest of the snapshot is not held longer."""


@dataclass
class _Reader:
    """One reader's last outcome and, while it runs on its own, its unfinished reading."""

    last: Any = None
    failure: str = ""
    running: Future[Any] | None = None
    running_since: float = 0.0


class IsolatedReaders:
    """Runs each named reader so that it can fail or be slow alone."""

    def __init__(
        self, deadline_s: float = READER_DEADLINE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.deadline_s = deadline_s
        self._clock = clock
        self._readers: dict[str, _Reader] = {}

    def inline(self, name: str, fallback: T, read: Callable[[], T]) -> T:
        """`read()` here, now; its fallback and an alert if it raises."""
        reader = self._reader(name)
        try:
            value = read()
        except Exception as exc:
            self._failed(name, reader, exc)
            return fallback
        reader.failure = ""
        return value

    def bounded(self, name: str, fallback: T, read: Callable[[], T]) -> T:
        """`read()` on the reader's own thread, waited for at most the deadline.

        A reader still running from an earlier snapshot is not started again: its last reading
        (else `fallback`) stands, with a `reader_slow` alert, until it ends.
        """
        reader = self._reader(name)
        if reader.running is None:
            reader.running, reader.running_since = _start(name, read), self._clock()
        wait([reader.running], timeout=self.deadline_s)
        if not reader.running.done():  # not its own TimeoutError (an NFS read's): done() says
            return fallback if reader.last is None else cast(T, reader.last)
        try:
            value = reader.running.result()
        except Exception as exc:
            reader.running, reader.last = None, None
            self._failed(name, reader, exc)
            return fallback
        reader.running, reader.last, reader.failure = None, value, ""
        return cast(T, value)

    def alerts(self, now: float) -> tuple[Alert, ...]:
        """One alert per reader that failed at its last reading or is still running past its deadline."""
        alerts = [
            Alert("reader_failed", "warning", f"the {name} reader failed ({reader.failure}); "
                  "its part of the dashboard is empty until it reads again (the agent's log has "
                  "the traceback)", name, now)
            for name, reader in self._readers.items() if reader.failure
        ]  # fmt: skip
        alerts += [
            Alert("reader_slow", "warning", f"the {name} reader has been reading for "
                  f"{self._clock() - reader.running_since:.0f} s; its part of the dashboard shows "
                  "its last reading until it ends", name, now)
            for name, reader in self._readers.items()
            if reader.running is not None and self._clock() - reader.running_since > self.deadline_s
        ]  # fmt: skip
        return tuple(alerts)

    def _reader(self, name: str) -> _Reader:
        return self._readers.setdefault(name, _Reader())

    def _failed(self, name: str, reader: _Reader, exc: Exception) -> None:
        # what a file made a reader raise may quote the file: printable, one line, cut
        reason = bounded_reason(f"{type(exc).__name__}: {exc}") or type(exc).__name__
        if reason != reader.failure:  # once per new failure, not at every snapshot
            log.error("the %s reader failed", name, exc_info=exc)
        reader.failure = reason


def _start(name: str, read: Callable[[], Any]) -> Future[Any]:
    """`read()` on a daemon thread of its own: one that never ends cannot hold the agent's exit."""
    future: Future[Any] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(read())
        except BaseException as exc:  # whatever ends the reading ends the wait for it
            future.set_exception(exc)

    threading.Thread(target=run, name=f"reader-{name}", daemon=True).start()
    return future
