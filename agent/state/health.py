"""Whether the agent can still write its own state folder, as an alert the consoles see.

A full state folder must not take the agent down: requests are still answered (a write that
fails becomes an error naming its path), the audit line that could not be written is logged,
and nothing is started whose records cannot be kept. This module remembers the last failed
write until a write succeeds again, and looks at the free space, so the console says why.
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import Alert

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})
"""Errnos that mean "this cannot be written now", not "the agent has a bug"."""
MIN_FREE_BYTES = 16 * 1024 * 1024
"""Below this, the next job's folder, log and audit lines may not fit."""


@dataclass(frozen=True, slots=True)
class WriteFailure:
    """One write to the state folder that failed."""

    path: str
    reason: str
    at: float


class StateHealth:
    """The failed writes to the state folder, by what they were for, and its free space."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.failures: dict[str, WriteFailure] = {}
        """By the entry of the state folder the write was under (audit.jsonl, jobs...)."""

    def failed(self, error: OSError) -> None:
        """Note a write that failed."""
        path = str(error.filename) if error.filename else str(self.root)
        failure = WriteFailure(path, error.strerror or str(error), time.time())
        self.failures[self._entry(path)] = failure

    def wrote(self, path: Path) -> None:
        """A write under the same entry as `path` succeeded: that part has room again."""
        self.failures.pop(self._entry(str(path)), None)

    def alerts(self, now: float) -> list[Alert]:
        """`state_full` while the state folder cannot be written, or is about to be full."""
        free = _free_bytes(self.root)
        failures = tuple(self.failures.values())  # at once: the snapshot's thread reads it
        whys = [f"writing {f.path} failed: {f.reason}" for f in failures]
        if free is not None and free < MIN_FREE_BYTES:
            whys.append(f"only {free:,} bytes are free there")
        if not whys:
            return []
        return [
            Alert(
                "state_full",
                "error",
                f"the agent's state folder {self.root}: {'; '.join(whys)}. Jobs cannot be launched "
                "or their ends recorded until this is fixed; requests are still answered",
                str(self.root),
                now,
            )  # fmt: skip
        ]

    def _entry(self, path: str) -> str:
        try:
            return Path(path).relative_to(self.root).parts[0]
        except (ValueError, IndexError):
            return ""


def _free_bytes(path: Path) -> int | None:
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
