"""How much history is kept: by age, thinned with age, and by size, in short transactions.

A history found far over its limits (a 470 MB file) is pruned step by step, each step its own
short transaction: one transaction deleting most of the file would write as much again to the
write-ahead log, and hold the writer for as long.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_AGE_S = 30 * 24 * 3600.0
"""Points and events older than this are dropped."""
MAX_BYTES = 64 * 1024 * 1024
"""When the database holds more than this, the oldest points and events go first."""
FINE_FOR_S = 3600.0
"""Points younger than this are all kept; older ones are thinned to COARSE_STEP_S apart."""
COARSE_STEP_S = 60.0
THIN_WINDOW_S = 6 * 3600.0
"""Old points are thinned this much of their time span per transaction (a multiple of the step)."""
DELETE_CHUNK_ROWS = 50_000
"""Rows deleted for age per transaction."""

Step = Callable[[sqlite3.Connection], bool]
"""One part of a pruning; True when it has more to do (it is run again, in a new transaction)."""


@dataclass(frozen=True, slots=True)
class Retention:
    """How much history is kept."""

    max_age_s: float = MAX_AGE_S
    max_bytes: int = MAX_BYTES


def prune(db: sqlite3.Connection, now: float, retention: Retention) -> None:
    """Drop what is too old, thin old points to one a minute, then cut the oldest if too big.

    All of it in the caller's transaction; `prune_in_steps` is the same in short transactions.
    """
    for step in prune_steps(db, now, retention):
        while step(db):
            pass


def prune_in_steps(
    db: sqlite3.Connection, now: float, retention: Retention, go_on: Callable[[], bool]
) -> None:
    """`prune`, each step committed on its own, and the write-ahead log cut back after.

    `go_on` is asked before each step: a closing agent does not wait for a long pruning. With
    nothing pruned the log is left as it is: shrinking it then frees nothing worth having, and
    freed space appearing under a full state folder moved what a launch could write there.
    """
    changes = db.total_changes
    for step in prune_steps(db, now, retention):
        more = True
        while more and go_on():
            with db:
                more = step(db)
    if db.total_changes != changes:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def prune_steps(db: sqlite3.Connection, now: float, retention: Retention) -> Iterator[Step]:
    """The steps of one pruning, in order."""
    oldest = now - retention.max_age_s
    yield lambda db: _delete_chunk(db, "points", oldest)
    yield lambda db: _delete_chunk(db, "events", oldest)
    fine_from = now - FINE_FOR_S
    first = db.execute("SELECT MIN(ts) FROM points WHERE ts < ?", (fine_from,)).fetchone()[0]
    if first is not None:
        start = math.floor(first / COARSE_STEP_S) * COARSE_STEP_S
        while start < fine_from:
            end = min(start + THIN_WINDOW_S, fine_from)
            yield functools.partial(_thin, start=start, end=end)
            start = end
    yield lambda db: used_bytes(db) > retention.max_bytes and _drop_oldest_share(db)


def _delete_chunk(db: sqlite3.Connection, table: str, before: float) -> bool:
    deleted = db.execute(
        f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE ts < ? LIMIT ?)",  # noqa: S608
        (before, DELETE_CHUNK_ROWS),
    ).rowcount
    return deleted >= DELETE_CHUNK_ROWS


def _thin(db: sqlite3.Connection, start: float, end: float) -> bool:
    """Keep the first point of each dataset and minute in [start, end)."""
    db.execute(
        "DELETE FROM points WHERE ts >= ? AND ts < ? AND rowid NOT IN (SELECT MIN(rowid) "
        "FROM points WHERE ts >= ? AND ts < ? GROUP BY dataset, CAST(ts / ? AS INTEGER))",
        (start, end, start, end, COARSE_STEP_S),
    )
    return False


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
