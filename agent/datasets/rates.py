"""Generation rates from the agent's own observations, kept across console connections.

Every scan adds one (time, tokens, responses) point per dataset. A rate is the slope over a
window of recent points, so a console that just connected sees real rates at once. Three windows
(1, 5 and 15 minutes) give the ETA and its range.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

WINDOWS_S = (60.0, 300.0, 900.0)
MAIN_WINDOW_S = 300.0
KEEP_S = 900.0


@dataclass(frozen=True, slots=True)
class Rate:
    """Tokens and responses per second over one window."""

    tokens_per_s: float
    responses_per_s: float


@dataclass
class RateHistory:
    """The recent progress points of one dataset."""

    points: collections.deque[tuple[float, int, int]] = field(default_factory=collections.deque)
    last_change_at: float | None = None

    def observe(self, now: float, tokens: int, responses: int) -> None:
        """Add a point; a count that went down (file replaced) starts the history afresh."""
        if self.points and (tokens < self.points[-1][1] or responses < self.points[-1][2]):
            self.points.clear()
        if not self.points or self.points[-1][2] != responses:
            self.last_change_at = now
        self.points.append((now, tokens, responses))
        while self.points and now - self.points[0][0] > KEEP_S:
            self.points.popleft()

    def rate(self, window_s: float = MAIN_WINDOW_S) -> Rate | None:
        """The slope over the last `window_s`, or None with less than two points in it."""
        if len(self.points) < 2:
            return None
        now = self.points[-1][0]
        first = next(p for p in self.points if now - p[0] <= window_s)
        elapsed = now - first[0]
        if elapsed <= 0:
            return None
        last = self.points[-1]
        return Rate((last[1] - first[1]) / elapsed, (last[2] - first[2]) / elapsed)

    def rates(self) -> list[Rate]:
        """The rate over each window that has data."""
        return [rate for window in WINDOWS_S if (rate := self.rate(window)) is not None]
