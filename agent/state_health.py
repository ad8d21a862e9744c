"""Whether the agent can still write its own state folder, as an alert the consoles see.

A full state folder must not take the agent down: requests are still answered (a write that
fails becomes an error naming its path), the audit line that could not be written is logged,
and nothing is started whose records cannot be kept. This module remembers the last failed
write until a write succeeds again, and looks at the free space, so the console says why.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import Alert

MIN_FREE_BYTES = 16 * 1024 * 1024
"""Below this, the next job's folder, log and audit lines may not fit."""


@dataclass(frozen=True, slots=True)
class WriteFailure:
    """One write to the state folder that failed."""

    path: str
    reason: str
    at: float


class StateHealth:
    """The last failed write to the state folder and its free space."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.failure: WriteFailure | None = None

    def failed(self, error: OSError) -> None:
        """Note a write that failed."""
        path = str(error.filename) if error.filename else str(self.root)
        self.failure = WriteFailure(path, error.strerror or str(error), time.time())

    def wrote(self) -> None:
        """A write succeeded: whatever failed before has room again."""
        self.failure = None

    def alerts(self, now: float) -> list[Alert]:
        """`state_full` while the state folder cannot be written, or is about to be full."""
        free = _free_bytes(self.root)
        if self.failure is None and (free is None or free >= MIN_FREE_BYTES):
            return []
        why = (
            f"writing {self.failure.path} failed: {self.failure.reason}"
            if self.failure is not None
            else f"only {free or 0:,} bytes are free there"
        )
        return [
            Alert(
                "state_full",
                "error",
                f"the agent's state folder {self.root}: {why}. Jobs cannot be launched or their "
                "ends recorded until space is freed there; requests are still answered",
                str(self.root),
                now,
            )  # fmt: skip
        ]


def _free_bytes(path: Path) -> int | None:
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
