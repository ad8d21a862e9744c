"""What the agent saw over time, kept in its state folder so a late console and a restart see it.

`history.sqlite3` (stdlib sqlite3, WAL, one writer thread) holds per-dataset points (tokens and
responses over time) and a timeline of events. Every write is its own committed transaction on
the one writer thread, so a SIGKILL loses at most the write in progress and never the file.
Retention is bounded by age and by size. Nothing here runs on the event loop: the async
methods hand the work to the writer thread; the blocking readers are for threads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agent.protocol import EventsList, TimelineEvent, TokensAt

log = logging.getLogger(__name__)

T = TypeVar("T")

FILE_NAME = "history.sqlite3"
MAX_AGE_S = 30 * 24 * 3600.0
"""Points and events older than this are dropped."""
MAX_BYTES = 64 * 1024 * 1024
"""When the database holds more than this, the oldest points and events go first."""
FINE_FOR_S = 3600.0
"""Points younger than this are all kept; older ones are thinned to COARSE_STEP_S apart."""
COARSE_STEP_S = 60.0
PRUNE_EVERY_S = 600.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    dataset TEXT NOT NULL, ts REAL NOT NULL, tokens INTEGER NOT NULL, responses INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS points_by_dataset ON points (dataset, ts);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, ts REAL NOT NULL, kind TEXT NOT NULL, subject TEXT NOT NULL,
    severity TEXT NOT NULL, message TEXT NOT NULL, detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_time ON events (ts);
"""


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


@dataclass(frozen=True, slots=True)
class Retention:
    """How much history is kept."""

    max_age_s: float = MAX_AGE_S
    max_bytes: int = MAX_BYTES


class History:
    """The agent's history database: one writer thread, readers from any thread."""

    def __init__(self, folder: Path, retention: Retention | None = None) -> None:
        self.path = folder / FILE_NAME
        self.retention = retention or Retention()
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="history")
        self._write_db: sqlite3.Connection | None = None
        self._read_db: sqlite3.Connection | None = None
        self._reading = threading.Lock()
        self._pruned_at = 0.0

    async def add_points(self, points: Iterable[Point]) -> None:
        """Store points (in one transaction), off the event loop."""
        rows = [(p.dataset, p.ts, p.tokens, p.responses) for p in points]
        if rows:
            await self._write(
                lambda db: db.executemany("INSERT INTO points VALUES (?,?,?,?)", rows)
            )

    async def add_event(
        self, kind: str, subject: str, message: str, severity: str = "info",
        ts: float | None = None, **detail: Any,
    ) -> None:  # fmt: skip
        """Store one event of the timeline, off the event loop."""
        row = (
            time.time() if ts is None else ts,
            kind,
            subject,
            severity,
            message,
            json.dumps(detail),
        )
        await self._write(lambda db: db.execute(
            "INSERT INTO events (ts, kind, subject, severity, message, detail) VALUES (?,?,?,?,?,?)",
            row,
        ))  # fmt: skip

    async def prune_if_due(self, now: float) -> None:
        """Apply retention at most every PRUNE_EVERY_S."""
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            await self._write(lambda db: prune(db, now, self.retention))

    async def _write(self, work: Callable[[sqlite3.Connection], object]) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._writer, self._commit, work)

    def _commit(self, work: Callable[[sqlite3.Connection], object]) -> None:
        if self._write_db is None:
            self._write_db = connect(self.path)
        with self._write_db:
            work(self._write_db)

    def points(self, dataset: str, since: float) -> list[Point]:
        """A dataset's points from `since` on, oldest first (blocking: call from a thread)."""
        rows = self._read(
            "SELECT dataset, ts, tokens, responses FROM points WHERE dataset = ? AND ts >= ? "
            "ORDER BY ts", (dataset, since),
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
        """(ts, tokens, responses) of a dataset from `since` on: what seeds its rates."""
        return [(p.ts, p.tokens, p.responses) for p in self.points(dataset, since)]

    def events(self, since: float, limit: int) -> list[Recorded]:
        """The newest `limit` events from `since` on, oldest first (blocking: call from a thread)."""
        rows = self._read(
            "SELECT ts, kind, subject, severity, message, detail FROM events WHERE ts >= ? "
            "ORDER BY ts DESC, id DESC LIMIT ?", (since, limit),
        )  # fmt: skip
        return [Recorded(r[0], r[1], r[2], r[3], r[4], _detail(r[5])) for r in reversed(rows)]

    def timeline(self, since: float, limit: int) -> EventsList:
        """`events` as the protocol carries them (blocking: call from a thread)."""
        return EventsList(tuple(map(_timeline_event, self.events(since, limit))))

    def _read(self, query: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._reading:
            if self._read_db is None:
                self._read_db = connect(self.path)
            return self._read_db.execute(query, args).fetchall()

    def close(self) -> None:
        """Finish the writes queued and close both connections."""
        self._writer.submit(self._close_writer).result()
        self._writer.shutdown()
        with self._reading:
            if self._read_db is not None:
                self._read_db.close()
                self._read_db = None

    def _close_writer(self) -> None:
        if self._write_db is not None:
            self._write_db.close()
            self._write_db = None


def connect(path: Path) -> sqlite3.Connection:
    """Open (and if need be create) the database in WAL mode; the schema is made idempotently.

    synchronous=NORMAL in WAL mode keeps every committed write through a crash of the process;
    only a power loss may take back the last commits.
    """
    db = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    db.isolation_level = "DEFERRED"  # from here on, `with db:` is one transaction
    return db


def prune(db: sqlite3.Connection, now: float, retention: Retention) -> None:
    """Drop what is too old, thin old points to one a minute, then cut the oldest if too big."""
    oldest = now - retention.max_age_s
    db.execute("DELETE FROM points WHERE ts < ?", (oldest,))
    db.execute("DELETE FROM events WHERE ts < ?", (oldest,))
    db.execute(
        "DELETE FROM points WHERE ts < ? AND rowid NOT IN (SELECT MIN(rowid) FROM points "
        "WHERE ts < ? GROUP BY dataset, CAST(ts / ? AS INTEGER))",
        (now - FINE_FOR_S, now - FINE_FOR_S, COARSE_STEP_S),
    )
    while used_bytes(db) > retention.max_bytes and _drop_oldest_share(db):
        pass


def used_bytes(db: sqlite3.Connection) -> int:
    """Bytes of the database's pages in use (free pages are reused, not counted)."""
    pages = (
        db.execute("PRAGMA page_count").fetchone()[0]
        - db.execute("PRAGMA freelist_count").fetchone()[0]
    )
    return int(pages * db.execute("PRAGMA page_size").fetchone()[0])


def _drop_oldest_share(db: sqlite3.Connection) -> bool:
    """Drop the oldest quarter of the time span held; False when nothing is left to drop."""
    first, last = db.execute(
        "SELECT MIN(ts), MAX(ts) FROM (SELECT ts FROM points UNION ALL SELECT ts FROM events)"
    ).fetchone()
    if first is None:
        return False
    cut = first + max((last - first) / 4, 1e-6)
    db.execute("DELETE FROM points WHERE ts < ?", (cut,))
    db.execute("DELETE FROM events WHERE ts < ?", (cut,))
    return True


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
