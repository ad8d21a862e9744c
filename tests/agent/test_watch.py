"""Snapshots pushed on a timer and at once when a job changes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT_WATCH,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    WatchParams,
)
from console.link.agent_link import AgentLink
from tests.support.operations import local_link


async def next_snapshot(link: AgentLink, timeout_s: float) -> Snapshot:
    while True:
        event = await asyncio.wait_for(link.events.get(), timeout_s)
        if isinstance(event.data, Snapshot):
            return event.data


async def test_snapshots_arrive_on_the_interval_and_on_job_changes(state_dir: Path) -> None:
    config = PipelineConfig(
        jobs={"nap": JobSpec((sys.executable, "-c", "import time; time.sleep(30)"))}
    )
    async with local_link(state_dir, config) as link:
        await link.call(SNAPSHOT_WATCH, WatchParams(interval_s=30.0))
        first = await next_snapshot(link, 10)
        started = time.monotonic()
        job = await link.call(JOBS_LAUNCH, LaunchParams("nap"), idempotency_key="nap-1")
        pushed = await next_snapshot(link, 10)
        waited = time.monotonic() - started
        await link.call(SNAPSHOT_WATCH, WatchParams(interval_s=0.2))
        ticks = [await next_snapshot(link, 5) for _ in range(3)]
    assert first.jobs == ()
    assert [j.id for j in pushed.jobs] == [job.id]
    assert waited < 10, "the launch pushed a snapshot long before the 30 s interval"
    assert ticks[-1].taken_at > ticks[0].taken_at
