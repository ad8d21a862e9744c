"""Time that survives the wall clock stepping (NTP, a VM resume, someone running `date -s`).

Durations inside one process use the monotonic clock. Wall time is needed only where another
process wrote the time (runner.json's `updated_at`, a file's mtime): `StampAge` turns such a
stamp into an age on this process's monotonic clock. It compares wall times once, when the stamp
changes, and bounds the answer by what the monotonic clock saw since it last looked, so a step
of the wall clock cannot make a live writer look an hour old or a dead one look fresh for an
hour. A stamp from the future (the clock stepped back after it was written) is taken as new.

`Clock` is injected wherever time is read, so tests step the wall clock without touching the
machine's.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

STEP_TOLERANCE_S = 2.0
"""A wall clock that runs this much ahead of or behind the monotonic clock has stepped."""


class Clock(Protocol):
    """Where time comes from: the system's, or a test's."""

    def wall(self) -> float:
        """Epoch seconds, for stamps other processes read."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps, for durations inside this process."""
        ...


class SystemClock:
    """The machine's clocks."""

    def wall(self) -> float:
        """time.time()."""
        return time.time()

    def monotonic(self) -> float:
        """time.monotonic()."""
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()


class StampAge:
    """How long ago another process wrote a wall-clock stamp, measured on the monotonic clock."""

    def __init__(self) -> None:
        self._stamp: float | None = None
        self._written_at: float = 0.0
        """When the stamp was written, on the monotonic clock (an estimate, never in the future)."""
        self._seen_at: float | None = None

    def age_s(self, stamp: float, wall_now: float, monotonic_now: float) -> float:
        """Seconds since `stamp` was written, given both clocks' readings now."""
        if stamp != self._stamp:
            since_seen = math.inf if self._seen_at is None else monotonic_now - self._seen_at
            self._written_at = monotonic_now - min(max(wall_now - stamp, 0.0), since_seen)
            self._stamp = stamp
        self._seen_at = monotonic_now
        return max(0.0, monotonic_now - self._written_at)


class StepWatch:
    """Notices the wall clock stepping, by how far it moved apart from the monotonic clock."""

    def __init__(self, tolerance_s: float = STEP_TOLERANCE_S) -> None:
        self.tolerance_s = tolerance_s
        self._offset: float | None = None
        """wall - monotonic at the last reading."""

    def step_s(self, wall_now: float, monotonic_now: float) -> float:
        """The step since the last call (+ forward, - back), or 0.0 when the clocks agree."""
        offset = wall_now - monotonic_now
        previous, self._offset = self._offset, offset
        if previous is None or abs(offset - previous) <= self.tolerance_s:
            return 0.0
        return offset - previous
