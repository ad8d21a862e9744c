"""The history's SQLite file: opened without following links, its faults told apart, moved aside.

A history file is one the agent made, but it may still be found locked by another process,
damaged (a corrupt or truncated file, one that is not SQLite at all), read-only, a link, or
huge. This module says which fault an sqlite3 error is, opens the file with its write-ahead log
bounded, and moves a damaged file aside so a fresh one can start. It never decides when to
retry or what to tell the user: that is the writer's (`history_writer`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

FILE_NAME = "history.sqlite3"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
"""SQLite's own files next to the database: they move and are checked with it."""
ASIDE_MARK = ".corrupt-"
KEPT_ASIDE = 3
"""Damaged histories moved aside are kept for a look, the newest this many; older ones go."""
JOURNAL_LIMIT_BYTES = 16 * 1024 * 1024
"""After a checkpoint the write-ahead log is cut back to this: it cannot grow without bound."""
AUTOCHECKPOINT_PAGES = 1000

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

FaultKind = Literal["busy", "damaged", "unwritable", "refused"]
BUSY_NAMES = ("SQLITE_BUSY", "SQLITE_LOCKED")
DAMAGED_NAMES = ("SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_CANTOPEN")
"""A file in this state is of no more use where it lies: moved aside, a fresh one takes its place."""
REFUSED_ERRORS = (
    sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.DataError
)  # fmt: skip
"""The write itself is wrong (a bug, a number too big): trying it again cannot help."""


class HistoryError(Exception):
    """The history could not be used: how (busy, damaged, unwritable) and why, in words."""

    def __init__(self, kind: FaultKind, reason: str) -> None:
        super().__init__(reason)
        self.kind: FaultKind = kind
        self.reason = reason


def fault_of(error: sqlite3.Error | OSError) -> HistoryError:
    """Which fault an error from SQLite (or from the file system around it) is."""
    if isinstance(error, OSError):
        return HistoryError("unwritable", error.strerror or str(error))
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith(BUSY_NAMES):
        return HistoryError("busy", f"locked by another process ({error})")
    if name.startswith(DAMAGED_NAMES) or _not_a_database(error):
        return HistoryError("damaged", str(error))
    if isinstance(error, REFUSED_ERRORS):
        return HistoryError("refused", str(error))
    return HistoryError("unwritable", str(error))


def _not_a_database(error: sqlite3.Error) -> bool:
    return type(error) is sqlite3.DatabaseError


def check_not_linked(path: Path) -> None:
    """Raise a damaged HistoryError when the file or one of SQLite's side files is no plain file.

    SQLite follows links when it opens: a link planted in its place would have the agent write
    wherever it points.
    """
    for each in (path, *(path.with_name(path.name + s) for s in SIDE_SUFFIXES)):
        try:
            mode = os.lstat(each).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise fault_of(exc) from None
        if not stat.S_ISREG(mode):
            what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise HistoryError("damaged", f"{each.name} is {what}")


def connect(path: Path, busy_s: float = 10.0) -> sqlite3.Connection:
    """Open (and if need be create) the database in WAL mode; the schema is made idempotently.

    synchronous=NORMAL in WAL mode keeps every committed write through a crash of the process;
    only a power loss may take back the last commits. A lock held by another process is waited
    on for `busy_s` at most.
    """
    check_not_linked(path)
    db = sqlite3.connect(path, timeout=busy_s, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA journal_size_limit={JOURNAL_LIMIT_BYTES}")
        db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        db.executescript(SCHEMA)
    except BaseException:
        db.close()
        raise
    db.isolation_level = "DEFERRED"  # from here on, `with db:` is one transaction
    return db


def connect_reader(path: Path, busy_s: float) -> sqlite3.Connection:
    """A connection that only reads: it makes no schema and changes nothing in the file."""
    check_not_linked(path)
    db = sqlite3.connect(path, timeout=busy_s, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA query_only=1")
    return db


def move_aside(path: Path) -> Path:
    """Rename the damaged file (and its side files) to `<name>.corrupt-<time>`; returns that name.

    Raises OSError when it cannot be moved (a read-only folder). Older moved-aside files past
    KEPT_ASIDE are removed, so repeated damage cannot fill the disk.
    """
    aside = path.with_name(f"{path.name}{ASIDE_MARK}{time.strftime('%Y%m%dT%H%M%S')}")
    number = 1
    while aside.exists():
        aside, number = aside.with_name(f"{aside.name.split('~')[0]}~{number}"), number + 1
    for suffix in ("", *SIDE_SUFFIXES):
        source = path.with_name(path.name + suffix)
        if os.path.lexists(source):
            os.rename(source, aside.with_name(aside.name + suffix))
    _forget_old_asides(path)
    return aside


def _forget_old_asides(path: Path) -> None:
    found = sorted(
        (p for p in path.parent.glob(f"{path.name}{ASIDE_MARK}*") if not p.name.endswith(SIDE_SUFFIXES)),
        key=lambda p: p.lstat().st_mtime_ns,
    )  # fmt: skip
    for old in found[:-KEPT_ASIDE]:
        for suffix in ("", *SIDE_SUFFIXES):
            try:
                old.with_name(old.name + suffix).unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not remove the old history %s: %s", old, exc)
