"""A clock for the agent's trackers that moves only when a test says so, and the check that a
live run's figures hold across a step of the wall clock (the tests and the clock_steps fault
scenario share it)."""

from __future__ import annotations

import time

from agent.protocol import DatasetProgress


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


def live_run_problem(
    progress: DatasetProgress, rate_tokens_per_s: float, factor: float
) -> str | None:
    """What is wrong, if anything, with a live run's figures: it must show running with a
    writer, a rate within `factor` of `rate_tokens_per_s` (the rate measured apart), and an ETA."""
    if progress.status != "running" or not progress.writer_active:
        return f"status {progress.status}, writer_active {progress.writer_active}"
    rate, low, high = progress.tokens_per_s, rate_tokens_per_s / factor, rate_tokens_per_s * factor
    if rate is None or not low <= rate <= high:
        return f"rate {rate} tokens/s, the checker measures {rate_tokens_per_s:.0f}"
    return "no ETA" if progress.eta_s is None else None
