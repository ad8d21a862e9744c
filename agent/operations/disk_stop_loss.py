"""The hidden-states stop-loss: the job stopped cleanly before its disk is full, not after.

A capture that fills its disk dies mid-file, on a box whose other jobs (and the agent's state)
share that disk. While a hidden-states job of the agent's runs, each snapshot's plan measures
the free space where it writes; below the floor (`low_disk_floor_bytes`, at least STOP_BELOW)
the job is stopped with its own stop signal, once: both trainers skip the samples already
written when run again, so a larger disk (or a smaller export) resumes it. Where the job's
`output_quota_bytes` leaves less room than the disk, the floor is the quota's: 1 % of it, at
least QUOTA_STOP_BELOW (the disk is not at risk; the job's next file is).
"""

from __future__ import annotations

from agent.datasets.disk_space import size_text
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.operations.stop_once import StopOnce
from agent.plans.hidden_states import room_text
from agent.protocol import HiddenStatesPlan, JobInfo, Snapshot
from agent.tasks import TaskOwner

STOP_BELOW = 1 << 30
"""The least free space a running hidden-states job is stopped at (1 GiB)."""
QUOTA_STOP_BELOW = 1 << 20
QUOTA_STOP_SHARE = 0.01


class DiskStopLoss:
    """Stops a running hidden-states job whose output filesystem is about to fill."""

    def __init__(self, box: Box, announcer: Announcer, tasks: TaskOwner) -> None:
        self.box = box
        self.stops = StopOnce(box, announcer, tasks, "hidden_states_stop_loss")

    async def heard(self, snapshot: Snapshot) -> None:
        """Stop it when the free space is below the floor (an observer listener; never waits)."""
        plan = snapshot.hidden_states_plan
        if plan is None or plan.bytes_free is None or plan.bytes_free >= self.floor(plan):
            return
        for job in snapshot.jobs:
            if _capturing(job, plan.job):
                self.stops.stop(job, (
                    f"{room_text(plan)}, under the floor of {size_text(self.floor(plan))}: "
                    "stopped before the room runs out; the samples written stay, and a run on "
                    "more space skips them"
                ), "error")  # fmt: skip

    def floor(self, plan: HiddenStatesPlan) -> int:
        """The room below which the job is stopped."""
        if plan.room_by_quota and plan.quota_bytes is not None:
            return max(QUOTA_STOP_BELOW, int(plan.quota_bytes * QUOTA_STOP_SHARE))
        datasets = self.box.pipeline.datasets
        return max(STOP_BELOW, datasets.low_disk_floor_bytes if datasets is not None else 0)


def _capturing(job: JobInfo, name: str) -> bool:
    return job.name == name and job.state == "running" and not job.external
