"""Generation rates from the agent's own observations, kept across console connections.

Every scan adds one (time, tokens, responses) point per dataset. A rate is the slope over a
window of recent points, so a console that just connected sees real rates at once. Three windows
(1, 5 and 15 minutes) give the ETA and its range; the hour's rate is kept beside them. A
history seeds it (`seeded`), so a restarted agent has its rates at once.
"""

from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass, field

from agent.protocol import RATE_WINDOWS_S

WINDOWS_S = (60.0, 300.0, 900.0)
MAIN_WINDOW_S = 300.0
HOUR_S = 3600.0
KEEP_S = HOUR_S
COVERED_SHARE = 0.9
"""A window's rate is given once the points cover this much of it."""
SPACING_S = 5.0
"""Points closer together than this are merged (the newest kept): bounded memory for an hour."""


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
        if len(self.points) >= 2 and now - self.points[-2][0] < SPACING_S:
            self.points.pop()
        self.points.append((now, tokens, responses))
        while self.points and now - self.points[0][0] > KEEP_S:
            self.points.popleft()

    def rate(self, window_s: float = MAIN_WINDOW_S) -> Rate | None:
        """The slope over the last `window_s`, or None with less than two points in it."""
        if len(self.points) < 2:
            return None
        now = self.points[-1][0]
        first = self.points[bisect.bisect_left(self.points, now - window_s, key=_time_of)]
        elapsed = now - first[0]
        if elapsed <= 0:
            return None
        last = self.points[-1]
        return Rate((last[1] - first[1]) / elapsed, (last[2] - first[2]) / elapsed)

    @classmethod
    def seeded(
        cls, points: list[tuple[float, int, int]], wall_now: float, monotonic_now: float
    ) -> RateHistory:
        """A history that starts from earlier (wall time, tokens, responses) points."""
        history = cls()
        for ts, tokens, responses in points:
            history.observe(monotonic_now - (wall_now - ts), tokens, responses)
        history.last_change_at = None  # when it last changed is the files' to say, not ours
        return history

    def rates(self) -> list[Rate]:
        """The rate over each window that has data."""
        return [rate for window in WINDOWS_S if (rate := self.rate(window)) is not None]

    def tokens_per_s_by_window(self) -> tuple[float | None, ...]:
        """Tokens/s over each of the snapshot's RATE_WINDOWS_S (the ETA's three and the hour).

        None for a window the history does not cover (most of it) while tokens come: five
        minutes of points gave a "60 min" rate that was the five minutes'. A still
        dataset's 0 holds over any window, and keeps its result still (the scan reuses it).
        """
        return tuple(
            None if (r := self.rate(w)) is None
            or (r.tokens_per_s > 0 and self.span_s() < COVERED_SHARE * w)
            else r.tokens_per_s
            for w in RATE_WINDOWS_S
        )  # fmt: skip

    def span_s(self) -> float:
        """The time the points cover."""
        return self.points[-1][0] - self.points[0][0] if self.points else 0.0


def _time_of(point: tuple[float, int, int]) -> float:
    return point[0]
