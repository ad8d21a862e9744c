"""A clock for the agent's trackers that moves only when a test says so."""

from __future__ import annotations

import time


class SteppedClock:
    """Monotonic time that moves only when the test says; wall time follows it at an offset the
    test may also step, the way NTP or a VM resume steps a real host's wall clock."""

    def __init__(self, monotonic_s: float = 5000.0) -> None:
        self.monotonic_s = monotonic_s
        self.offset_s = time.time() - self.monotonic_s

    def wall(self) -> float:
        return self.monotonic_s + self.offset_s

    def monotonic(self) -> float:
        return self.monotonic_s
