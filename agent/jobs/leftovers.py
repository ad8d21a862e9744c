"""What a lost job left running is ended: every process that still carries its mark.

The shim ends what a job leaves behind when the job's main process ends. A job whose shim is gone
(the job killed it, or the OOM killer took it) ends with nobody to do that: it reads `lost`, and a
worker it started in a session of its own would run on unseen. The mark the shim put in the job's
environment names those processes wherever they went. Each lost job is swept once, and the sweep
is written down (`leftovers.json`), so a restarted agent does not sweep it again.
"""

from __future__ import annotations

import contextlib
import signal
import time

from agent.jobs.registry import JOB_FILE
from agent.jobs.stopper import GroupIdentity, StopPlan, stop_group
from agent.jobs.supervisor import Supervisor
from agent.protocol import JobEvent, JobInfo, Snapshot, StopStep
from agent.tasks import TaskOwner

LEFTOVERS_FILE = "leftovers.json"
SWEEP_PLAN = StopPlan(signal.SIGTERM, 5.0, 0.0)
"""SIGTERM, 5 s, then SIGKILL: what the shim gives the leftovers of a job that ended."""


class LeftoverSweep:
    """An observer listener: each job seen `lost` gets its marked processes ended, once."""

    def __init__(self, supervisor: Supervisor, tasks: TaskOwner) -> None:
        self._supervisor = supervisor
        self._tasks = tasks
        self._swept: set[str] = set()

    async def heard(self, snapshot: Snapshot) -> None:
        """Sweep every newly lost job of the agent's own, in a task (a listener never waits)."""
        for job in snapshot.jobs:
            if job.state == "lost" and not job.external and job.id not in self._swept:
                self._swept.add(job.id)
                _ = self._tasks.spawn(self.sweep(job), f"leftovers of {job.id}")

    async def sweep(self, job: JobInfo) -> int:
        """End what carries `job`'s mark; returns how many processes there were."""
        files = self._supervisor.registry.get(job.id)
        if files is None or files.read(LEFTOVERS_FILE) is not None:
            return 0
        mark = (files.read(JOB_FILE) or {}).get("mark")
        ended = 0
        if isinstance(mark, str) and mark:

            async def report(step: StopStep) -> None:
                await self._supervisor.emit(
                    JobEvent(job, f"sent {step.action} to {list(step.pids)}")
                )

            _, steps = await stop_group(GroupIdentity(None, (), mark=mark), SWEEP_PLAN, report)
            ended = len(steps[0].pids) if steps else 0
        with contextlib.suppress(OSError):  # unrecorded, the next agent sweeps it again: harmless
            files.write(LEFTOVERS_FILE, {"ended": ended, "at": time.time()})
        if ended:
            said = f"ended {ended} process(es) the lost job {job.name} left running (by its mark)"
            await self._supervisor.emit(JobEvent(job, said))
        return ended
