"""The hidden-states stop-loss: a running capture stopped before its disk fills, once.

The free space comes from the snapshot's plan (the filesystem where the job writes); a box and
an announcer stand in for the core's, recording what they are asked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from agent.operations.disk_stop_loss import STOP_BELOW, DiskStopLoss
from agent.protocol import (
    DatasetsConfig,
    HiddenStatesPlan,
    JobInfo,
    JobSpec,
    PipelineConfig,
    Snapshot,
    StopResult,
)
from agent.tasks import TaskOwner

JOB = JobInfo("hs-1", "hs", "hidden_states", "running", ("python",), pid=1)


@dataclass
class RecordingBox:
    pipeline: PipelineConfig
    stopped: list[str] = field(default_factory=list)

    async def stop(self, job_id: str) -> StopResult:
        self.stopped.append(job_id)
        return StopResult(JOB, "stopped", ())


@dataclass
class RecordingAnnouncer:
    said: list[tuple[str, str, str]] = field(default_factory=list)

    def event(
        self, kind: str, subject: str, message: str, severity: str = "info", **_: Any
    ) -> None:
        self.said.append((kind, message, severity))


async def settled(tasks: TaskOwner) -> None:
    """Until the stops spawned have run (they only await the recording box), then closed."""
    for _ in range(100):
        if not tasks.active:
            break
        await asyncio.sleep(0.01)
    await tasks.close()


def plan(free: int) -> HiddenStatesPlan:
    return HiddenStatesPlan("hs", "specforge", 10, 100, 1000, "/scratch/hs", free, 0, True, "x")


async def test_a_capture_short_of_space_is_stopped_once_and_said() -> None:
    floor = 4 << 30
    box = RecordingBox(PipelineConfig(DatasetsConfig("/d", low_disk_floor_bytes=floor),
                                      jobs={"hs": JobSpec(("python",), kind="hidden_states")}))  # fmt: skip
    announcer = RecordingAnnouncer()
    tasks = TaskOwner("test")
    watch = DiskStopLoss(box, announcer, tasks)  # type: ignore[arg-type]
    await watch.heard(Snapshot(1.0, "h", None, (), jobs=(JOB,), hidden_states_plan=plan(floor)))
    for _ in range(3):  # under the floor, snapshot after snapshot
        await watch.heard(
            Snapshot(2.0, "h", None, (), jobs=(JOB,), hidden_states_plan=plan(2 << 30))
        )
    await settled(tasks)
    assert box.stopped == ["hs-1"], "at the floor nothing; under it, one stop"
    [(kind, message, severity)] = announcer.said
    assert (kind, severity) == ("hidden_states_stop_loss", "error")
    assert "/scratch/hs has 2.0 GiB free, under the floor of 4.0 GiB" in message
    assert watch.floor(plan(0)) == floor
    bare = DiskStopLoss(RecordingBox(PipelineConfig()), announcer, tasks)  # type: ignore[arg-type]
    assert bare.floor(plan(0)) == STOP_BELOW


async def test_under_a_quota_the_floor_is_the_quotas_not_the_disks() -> None:
    """A 200 MiB quota with 10 MiB left is not stopped at the disk's 1 GiB floor but at 2 MiB:
    the disk is not at risk, the job's next file is."""
    box = RecordingBox(PipelineConfig(jobs={"hs": JobSpec(("python",), kind="hidden_states")}))
    tasks = TaskOwner("test")
    watch = DiskStopLoss(box, RecordingAnnouncer(), tasks)  # type: ignore[arg-type]
    quota = 200 << 20

    def left(room: int) -> HiddenStatesPlan:
        return replace(plan(room), quota_bytes=quota, room_by_quota=True)

    assert watch.floor(left(0)) == quota // 100
    await watch.heard(Snapshot(1.0, "h", None, (), jobs=(JOB,), hidden_states_plan=left(10 << 20)))
    await settled(tasks)
    assert box.stopped == []
    tasks = TaskOwner("test")
    watch = DiskStopLoss(box, RecordingAnnouncer(), tasks)  # type: ignore[arg-type]
    await watch.heard(Snapshot(1.0, "h", None, (), jobs=(JOB,), hidden_states_plan=left(1 << 20)))
    await settled(tasks)
    assert box.stopped == ["hs-1"]


async def test_nothing_is_stopped_that_is_not_a_running_capture_of_ours() -> None:
    box = RecordingBox(PipelineConfig())
    tasks = TaskOwner("test")
    watch = DiskStopLoss(box, RecordingAnnouncer(), tasks)  # type: ignore[arg-type]
    others = (
        JobInfo("hs-0", "hs", "hidden_states", "exited", (), pid=1),
        JobInfo("hs-x", "hs", "hidden_states", "running", (), pid=2, external=True),
        JobInfo("train-1", "train", "train", "running", (), pid=3),
    )
    await watch.heard(Snapshot(1.0, "h", None, (), jobs=others, hidden_states_plan=plan(1)))
    await watch.heard(Snapshot(1.0, "h", None, (), jobs=(JOB,), hidden_states_plan=None))
    await settled(tasks)
    assert box.stopped == []
