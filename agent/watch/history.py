"""What the agent saw over time, kept in its state folder so a late console and a restart see it.

`history.sqlite3` (stdlib sqlite3, WAL, one writer thread) holds per-dataset points (tokens and
responses over time) and a timeline of events. Writes are handed to the writer thread
(`history_writer`) and never waited on: the scanner, the guard and the snapshots go on whatever
the file does. A history that is locked, damaged, read-only or a link is an alert here, never a
traceback; the readers answer what they can or raise HistoryUnavailable saying why.
Retention is bounded by age and by size (`history_retention`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.protocol import Alert, EventsList, TimelineEvent, TokensAt
from agent.watch.history_file import FILE_NAME, HistoryError, connect, connect_reader, fault_of
from agent.watch.history_retention import Retention, prune, prune_in_steps, used_bytes
from agent.watch.history_writer import HistoryWriter, Standalone

__all__ = [
    "FILE_NAME", "History", "HistoryUnavailable", "Point", "Recorded", "Retention", "connect",
    "prune", "used_bytes",
]  # fmt: skip

PRUNE_EVERY_S = 600.0
READ_BUSY_S = 0.5
"""A reader waits this long at most on another process's lock."""
CATCH_UP_S = 1.0
"""A reader first lets the writer finish what was queued before it, this long at most."""
SEED_CATCH_UP_S = 0.1
"""The same for the rates a new dataset is seeded with, in the snapshot's thread."""
STUCK_ALERT_AFTER_S = 10.0
"""Writes held up this long (a lock another process holds) are an alert."""
RESET_ALERT_FOR_S = 3600.0
"""A history moved aside stays on the dashboard as an alert this long."""


class HistoryUnavailable(Exception):  # noqa: N818 - what a reader is told, not a bug
    """The history cannot be read now; the message says why and what happens next."""


@dataclass(frozen=True, slots=True)
class Point:
    """A dataset's totals at one wall-clock moment."""

    dataset: str
    ts: float
    tokens: int
    responses: int


@dataclass(frozen=True, slots=True)
class Recorded:
    """One event of the timeline, as stored."""

    ts: float
    kind: str
    subject: str
    severity: str
    message: str
    detail: dict[str, Any]


class History:
    """The agent's history database: one writer thread, readers from any thread."""

    def __init__(self, folder: Path, retention: Retention | None = None) -> None:
        self.path = folder / FILE_NAME
        self.retention = retention or Retention()
        self._writer = HistoryWriter(self.path)
        self._read_db: sqlite3.Connection | None = None
        self._read_generation = -1
        self._reading = threading.Lock()
        self._pruned_at = 0.0

    async def add_points(self, points: Iterable[Point]) -> None:
        """Queue points (one transaction) for the writer thread; returns at once."""
        rows = [(p.dataset, p.ts, p.tokens, p.responses) for p in points]
        if rows:
            self._writer.submit(
                lambda db: db.executemany("INSERT INTO points VALUES (?,?,?,?)", rows)
            )

    async def add_event(
        self, kind: str, subject: str, message: str, severity: str = "info",
        ts: float | None = None, **detail: Any,
    ) -> None:  # fmt: skip
        """Queue one event of the timeline for the writer thread; returns at once."""
        row = (
            time.time() if ts is None else ts,
            kind,
            subject,
            severity,
            message,
            json.dumps(detail),
        )
        self._writer.submit(lambda db: db.execute(
            "INSERT INTO events (ts, kind, subject, severity, message, detail) VALUES (?,?,?,?,?,?)",
            row,
        ))  # fmt: skip

    async def prune_if_due(self, now: float) -> None:
        """Queue retention at most every PRUNE_EVERY_S, in short transactions of its own."""
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            self._writer.submit(Standalone(
                lambda db: prune_in_steps(db, now, self.retention, self._writer.open_for_work)
            ))  # fmt: skip

    def written(self, timeout_s: float = CATCH_UP_S) -> bool:
        """Wait until what was queued is written; False when the writer is held up or time is up.

        Blocking: call from a thread.
        """
        return self._writer.caught_up(timeout_s)

    def alerts(self, now: float) -> list[Alert]:
        """`history_reset` for a damaged history moved aside, `history_stalled` while writes wait."""
        trouble = self._writer.trouble
        found = [
            Alert("history_reset", "error", _reset_message(self.path, reset.reason, reset.aside),
                  str(self.path), reset.at)
            for reset in tuple(trouble.resets) if now - reset.at < RESET_ALERT_FOR_S
        ]  # fmt: skip
        since = trouble.stuck_since
        if since is not None and now - since >= STUCK_ALERT_AFTER_S:
            found.append(Alert(
                "history_stalled", "warning" if trouble.stuck_kind == "busy" else "error",
                f"the history {self.path} could not be written for {now - since:,.0f} s: "
                f"{trouble.stuck_reason}. Its writes wait (the watch and the budget guard go on)"
                f"{_dropped(trouble.dropped)}",
                str(self.path), since,
            ))  # fmt: skip
        return found

    def points(self, dataset: str, since: float, catch_up_s: float = CATCH_UP_S) -> list[Point]:
        """A dataset's points from `since` on, oldest first (blocking: call from a thread)."""
        rows = self._read(
            "SELECT dataset, ts, tokens, responses FROM points WHERE dataset = ? AND ts >= ? "
            "ORDER BY ts", (dataset, since), catch_up_s,
        )  # fmt: skip
        return [Point(*row) for row in rows]

    def token_curve(self, dataset: str, since: float, most: int) -> tuple[TokensAt, ...]:
        """A dataset's tokens from `since` on, thinned to at most `most` points, the last kept."""
        points = self.points(dataset, since)
        step = max(1, -(-len(points) // most))
        kept = points[::step]
        if points and kept[-1] is not points[-1]:
            kept = [*kept[: most - 1], points[-1]]
        return tuple(TokensAt(p.ts, p.tokens) for p in kept)

    def rate_points(self, dataset: str, since: float) -> list[tuple[float, int, int]]:
        """(ts, tokens, responses) of a dataset from `since` on: what seeds its rates.

        Read in the snapshot's thread: it waits on no writer, and a history that cannot be
        read, or that the writer has not opened yet (a huge file being recovered), seeds
        nothing: the rates start from the scans.
        """
        self._writer.caught_up(SEED_CATCH_UP_S, while_stuck=False)
        if not self._writer.opened:
            return []
        try:
            points = self.points(dataset, since, catch_up_s=0.0)
        except HistoryUnavailable:
            return []
        return [(p.ts, p.tokens, p.responses) for p in points]

    def events(self, since: float, limit: int) -> list[Recorded]:
        """The newest `limit` events from `since` on, oldest first (blocking: call from a thread)."""
        rows = self._read(
            "SELECT ts, kind, subject, severity, message, detail FROM events WHERE ts >= ? "
            "ORDER BY ts DESC, id DESC LIMIT ?", (since, limit), CATCH_UP_S,
        )  # fmt: skip
        return [Recorded(r[0], r[1], r[2], r[3], r[4], _detail(r[5])) for r in reversed(rows)]

    def timeline(self, since: float, limit: int) -> EventsList:
        """`events` as the protocol carries them (blocking: call from a thread)."""
        return EventsList(tuple(map(_timeline_event, self.events(since, limit))))

    def _read(self, query: str, args: tuple[Any, ...], catch_up_s: float) -> list[tuple[Any, ...]]:
        self._writer.caught_up(catch_up_s, while_stuck=False)
        with self._reading:
            try:
                return self._reader().execute(query, args).fetchall()
            except (sqlite3.Error, OSError, HistoryError) as exc:
                raise self._unavailable(exc) from None

    def _reader(self) -> sqlite3.Connection:
        generation = self._writer.generation
        if self._read_db is not None and self._read_generation != generation:
            self._close_reader()
        if self._read_db is None:
            self._read_db = connect_reader(self.path, READ_BUSY_S)
            self._read_generation = generation
        return self._read_db

    def _unavailable(self, error: sqlite3.Error | OSError | HistoryError) -> HistoryUnavailable:
        fault = error if isinstance(error, HistoryError) else fault_of(error)
        if "no such table" in str(error):  # a fresh file the writer has not set up yet
            return HistoryUnavailable(f"the history {self.path} is being started afresh")
        generation = self._read_generation
        self._close_reader()
        if fault.kind == "damaged":
            self._writer.damaged(generation, fault.reason)
            return HistoryUnavailable(
                f"the history {self.path} is damaged ({fault.reason}); it is moved aside and "
                "started afresh: ask again in a moment"
            )
        return HistoryUnavailable(f"the history {self.path} cannot be read now: {fault.reason}")

    def _close_reader(self) -> None:
        if self._read_db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._read_db.close()
            self._read_db = None

    def close(self) -> None:
        """Write what is queued (a few seconds at most) and close both connections."""
        self._writer.close()
        with self._reading:
            self._close_reader()


def _reset_message(path: Path, reason: str, aside: Path | None) -> str:
    if aside is None:
        return (
            f"the history {path} is damaged ({reason}); it could not be moved aside, so nothing "
            f"is recorded until it is: move or delete it (the agent starts a fresh one)"
        )
    return (
        f"the history {path} was damaged ({reason}): it was moved aside to {aside.name} and a "
        "fresh one started; earlier points and events are only in the moved file"
    )


def _dropped(count: int) -> str:
    return f"; {count:,} writes past what may wait were dropped" if count else ""


def _timeline_event(event: Recorded) -> TimelineEvent:
    asked_by = event.detail.get("asked_by")
    return TimelineEvent(
        event.ts, event.kind, event.subject, event.severity, event.message,
        asked_by if isinstance(asked_by, str) else None,
    )  # fmt: skip


def _detail(text: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
