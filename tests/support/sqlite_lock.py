"""Another process holding an SQLite file's write lock: how a history stalls every write."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS hold (x)")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO hold VALUES (1)")
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def locked_by_another_process(path: Path) -> Iterator[None]:
    """Another process holds the write lock on the SQLite file `path` until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        if holder.stdout is None or holder.stdout.readline() != "locked\n":
            raise RuntimeError("the lock holder did not take its lock")
        yield
    finally:
        holder.communicate("", timeout=10)
