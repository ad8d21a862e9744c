"""The history's one writer thread: writes wait in a bounded queue, so nobody waits on them.

The scanner, the budget guard and the snapshots hand their writes over and go on: a history
locked by another process, damaged, read-only or huge delays only this thread. A write that
meets a lock is tried again (the lock is waited on BUSY_S at a time); one that meets a damaged
file has the file moved aside and goes into a fresh one; while the writes cannot be made at
all they wait here, up to MAX_QUEUED, and those past it are counted as dropped. What went wrong
is kept as `HistoryTrouble` for the alerts; this module raises none itself.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.watch.history_file import HistoryError, connect, fault_of, move_aside

log = logging.getLogger(__name__)

Work = Callable[[sqlite3.Connection], object]
BUSY_S = 0.5
"""How long one try waits on another process's lock before the writer looks at its queue again."""
BUSY_PAUSE_S = 0.1
"""The pause between two tries at a locked history (each try waits BUSY_S on the lock)."""
RETRY_MAX_S = 5.0
"""The longest pause between two tries at a history that cannot be written (it doubles up to it)."""
MAX_QUEUED = 2000
"""Writes waiting for the history, at most: a history that cannot be written costs no more."""
MAX_BATCH = 200
"""Writes committed in one transaction when they have piled up."""
CLOSE_WITHIN_S = 3.0


@dataclass(frozen=True, slots=True)
class Reset:
    """A damaged history moved aside and started afresh."""

    at: float
    reason: str
    aside: Path | None
    """Where the damaged file went; None when it could not be moved (then writes wait)."""


@dataclass(slots=True)
class HistoryTrouble:
    """What the writer has met: what the alerts say."""

    stuck_since: float | None = None
    """Wall time of the first failed try of the writes now waiting; None while writes go through."""
    stuck_reason: str = ""
    stuck_kind: str = ""
    dropped: int = 0
    resets: list[Reset] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Damaged:
    """A reader found the file damaged: the writer moves it aside unless it did already."""

    generation: int
    reason: str


class _Stop:
    """Write what is queued (within CLOSE_WITHIN_S), then close."""


@dataclass(frozen=True, slots=True)
class Standalone:
    """Work that makes its own transactions (pruning): run alone, outside any batch."""

    work: Work


_Unit = list[Work] | Standalone | _Damaged


class HistoryWriter:
    """Owns the write connection and the file; takes work from any thread without blocking."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.trouble = HistoryTrouble()
        self.generation = 0
        """Bumped each time the file is moved aside: readers reopen."""
        self.opened = False
        """Whether the writer has opened the file (and SQLite recovered its log) at least once."""
        self._queue: queue.Queue[Work | Standalone | _Damaged | _Stop] = queue.Queue(MAX_QUEUED)
        self._db: sqlite3.Connection | None = None
        self._done = threading.Condition()
        self._submitted = 0
        self._finished = 0
        self._closing_by: float | None = None
        self._thread = threading.Thread(target=self._run, name="history", daemon=True)
        self._thread.start()

    def submit(self, work: Work | Standalone) -> None:
        """Queue one write (one transaction with whatever is queued with it); never blocks."""
        try:
            self._queue.put_nowait(work)
        except queue.Full:
            self.trouble.dropped += 1
            return
        with self._done:
            self._submitted += 1

    def damaged(self, generation: int, reason: str) -> None:
        """A reader found the file of `generation` damaged."""
        with contextlib.suppress(queue.Full):  # then the writer will find it damaged itself
            self._queue.put_nowait(_Damaged(generation, reason))

    def caught_up(self, timeout_s: float, while_stuck: bool = True) -> bool:
        """Wait until the writes queued so far are done or `timeout_s` passes.

        Without `while_stuck`, it stops waiting as soon as the writer is held up.
        """
        deadline = time.monotonic() + timeout_s
        with self._done:
            target = self._submitted
            while self._finished < target and (while_stuck or self.trouble.stuck_since is None):
                left = deadline - time.monotonic()
                if left <= 0 or not self._done.wait(left):
                    return False
            return self._finished >= target

    def open_for_work(self) -> bool:
        """False once closing: long work (a pruning) stops between its steps."""
        return self._closing_by is None

    def close(self) -> None:
        """Write what is queued, giving up after CLOSE_WITHIN_S, and close the file."""
        self._closing_by = time.monotonic() + CLOSE_WITHIN_S
        try:
            self._queue.put(_Stop(), timeout=CLOSE_WITHIN_S)
        except queue.Full:
            log.warning("the history writer is stuck; closing without its queued writes")
        self._thread.join(CLOSE_WITHIN_S + BUSY_S + 1.0)

    def _run(self) -> None:
        while True:
            units, stop = self._next_units()
            for unit in units:
                if isinstance(unit, _Damaged):
                    if unit.generation == self.generation:
                        self._reset(unit.reason)
                else:
                    self._write(unit)
            if stop:
                self._close_db()
                return

    def _next_units(self) -> tuple[list[_Unit], bool]:
        """What is queued now, in order: writes grouped into transactions of up to MAX_BATCH."""
        units: list[_Unit] = []
        item = self._queue.get()
        while True:
            if isinstance(item, _Stop):
                return units, True
            if isinstance(item, (_Damaged, Standalone)):
                units.append(item)
            elif units and isinstance(units[-1], list) and len(units[-1]) < MAX_BATCH:
                units[-1].append(item)
            else:
                units.append([item])
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return units, False

    def _write(self, unit: list[Work] | Standalone) -> None:
        pause_s, resets = BUSY_PAUSE_S, 0
        while True:
            if self._giving_up():
                self._finish(unit, dropped=True)
                return
            try:
                self._commit(unit)
            except (OverflowError, TypeError, ValueError) as exc:
                self._refused(unit, str(exc))
                return
            except (sqlite3.Error, OSError, HistoryError) as exc:
                fault = exc if isinstance(exc, HistoryError) else fault_of(exc)
                if fault.kind == "refused":
                    self._refused(unit, fault.reason)
                    return
                self._close_db()
                if fault.kind == "damaged" and resets == 0 and self._reset(fault.reason):
                    resets += 1
                    continue
                self._stuck(fault)
                time.sleep(BUSY_PAUSE_S if fault.kind == "busy" else pause_s)
                pause_s = min(RETRY_MAX_S, pause_s * 2)
                continue
            self._finish(unit, dropped=False)
            return

    def _refused(self, unit: list[Work] | Standalone, reason: str) -> None:
        """A write SQLite refuses is dropped alone: the others of its batch are tried one by one."""
        if isinstance(unit, list) and len(unit) > 1:
            for work in unit:
                self._write([work])
            return
        log.warning("a history write was refused and is dropped: %s", reason)
        self._finish(unit, dropped=True)

    def _giving_up(self) -> bool:
        """Closing, past its time, with writes that did not go through: they are dropped."""
        closing_by = self._closing_by
        return (
            closing_by is not None and time.monotonic() > closing_by
            and self.trouble.stuck_since is not None
        )  # fmt: skip

    def _commit(self, unit: list[Work] | Standalone) -> None:
        if self._db is None:
            self._db = connect(self.path, BUSY_S)
            self.opened = True
        if isinstance(unit, Standalone):
            unit.work(self._db)
            return
        with self._db:
            for work in unit:
                work(self._db)

    def _finish(self, unit: list[Work] | Standalone, dropped: bool) -> None:
        count = 1 if isinstance(unit, Standalone) else len(unit)
        if dropped:
            self.trouble.dropped += count
        else:
            self.trouble.stuck_since = None
        with self._done:
            self._finished += count
            self._done.notify_all()

    def _stuck(self, fault: HistoryError) -> None:
        if self.trouble.stuck_since is None:
            log.warning("writing the history %s failed: %s; writes wait and are retried",
                        self.path, fault.reason)  # fmt: skip
            self.trouble.stuck_since = time.time()
        self.trouble.stuck_reason, self.trouble.stuck_kind = fault.reason, fault.kind
        with self._done:
            self._done.notify_all()

    def _reset(self, reason: str) -> bool:
        """Move the damaged file aside for a fresh one; False when it cannot be moved."""
        self._close_db()
        try:
            aside: Path | None = move_aside(self.path)
        except OSError as exc:
            aside = None
            reason = f"{reason}; moving it aside failed: {exc.strerror or exc}"
        self.generation += 1
        if not self.trouble.resets or self.trouble.resets[-1].aside is not None or aside:
            self.trouble.resets.append(Reset(time.time(), reason, aside))
            del self.trouble.resets[:-10]
            log.warning("the history %s is damaged (%s); moved aside to %s; a fresh one starts",
                        self.path, reason, aside)  # fmt: skip
        return aside is not None

    def _close_db(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
