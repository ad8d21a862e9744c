"""A job the agent stops by itself for a reason it watches (a peak passed, a disk nearly full).

Each job is stopped once, with its own stop signal (so the trainer saves and leaves what it
wrote resumable), and the stop is an event with the reason: on the timeline, and to the webhook.
A stop asked for is never undone by a restart policy.
"""

from __future__ import annotations

import logging

from agent.errors import AgentError
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.protocol import JobInfo
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)


class StopOnce:
    """Stops each job at most once, saying why."""

    def __init__(self, box: Box, announcer: Announcer, tasks: TaskOwner, kind: str) -> None:
        self.box = box
        self.announcer = announcer
        self.tasks = tasks
        self.kind = kind
        """The event's kind."""
        self._stopped: set[str] = set()

    def stop(self, job: JobInfo, why: str, severity: str = "warning") -> None:
        """Stop `job` (in a task of its own) unless it was already; never waits."""
        if job.id in self._stopped:
            return
        self._stopped.add(job.id)
        _ = self.tasks.spawn(self._stop(job, why, severity), f"{self.kind} {job.id}")

    async def _stop(self, job: JobInfo, why: str, severity: str) -> None:
        try:
            result = await self.box.stop(job.id)
        except AgentError as exc:
            log.warning("%s of %s failed: %s", self.kind, job.id, exc.message)
            self.announcer.event(
                self.kind, job.id, f"{job.name}: {why}; the stop failed: {exc.message}", "error"
            )
            return
        self.announcer.event(self.kind, job.id, f"{job.name}: {why} ({result.outcome})", severity)
