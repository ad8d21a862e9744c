"""The host's wall clock as the agent sees it: steps it took, and stamps other processes wrote.

A step (NTP, a VM resume) changes nothing the agent computes, which runs on the monotonic clock;
it is still worth a word to the user, as an info alert for a while after. Stamps written by the
job shims (when a job ended) are aged on the monotonic clock (`StampAge`), so a step neither
keeps a `job_exited` alert for an hour nor drops it at once.
"""

from __future__ import annotations

import time

from agent.host.clock import SYSTEM_CLOCK, Clock, StampAge, StepWatch
from agent.protocol import Alert, JobInfo

STEP_ALERT_S = 600.0
"""How long a step stays announced."""


class WallClockWatch:
    """Steps of the wall clock, and the ages of the job-end stamps."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._steps = StepWatch()
        self._last_step: tuple[float, float, float] | None = None
        """(monotonic time it was seen, size in seconds, wall time after it)."""
        self._ended: dict[str, StampAge] = {}

    def observe(self) -> None:
        """Look for a step since the last call (call once per snapshot)."""
        wall, monotonic = self.clock.wall(), self.clock.monotonic()
        step = self._steps.step_s(wall, monotonic)
        if step:
            self._last_step = (monotonic, step, wall)

    def alerts(self, now: float) -> list[Alert]:
        """clock_stepped (info) while a step is recent."""
        if self._last_step is None:
            return []
        seen_at, step, wall = self._last_step
        if self.clock.monotonic() - seen_at > STEP_ALERT_S:
            return []
        at = time.strftime("%H:%M:%S", time.localtime(wall))
        message = (
            f"the host's wall clock stepped {'forward' if step > 0 else 'back'} by "
            f"{_span(abs(step))} (seen at {at}); rates, ETAs and stall checks run on the "
            "monotonic clock and are unaffected"
        )
        return [Alert("clock_stepped", "info", message, "", now)]

    def ended_age_s(self, job: JobInfo) -> float:
        """Seconds since `job` ended (0 for a job still running)."""
        if job.ended_at is None:
            return 0.0
        age = self._ended.setdefault(job.id, StampAge())
        return age.age_s(job.ended_at, self.clock.wall(), self.clock.monotonic())

    def keep_only(self, jobs: tuple[JobInfo, ...]) -> None:
        """Forget the stamps of jobs no longer listed."""
        listed = {job.id for job in jobs}
        for job_id in [j for j in self._ended if j not in listed]:
            del self._ended[job_id]


def _span(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
