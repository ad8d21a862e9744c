"""Snapshots pushed on a timer and at once when a job changes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from agent.protocol import Event, JobSpec, LaunchParams, PipelineConfig, WatchParams
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link


async def next_snapshot(link: AgentLink, timeout_s: float) -> Event:
    while True:
        event = await asyncio.wait_for(link.events.get(), timeout_s)
        if event.event == "snapshot":
            return event


async def test_snapshots_arrive_on_the_interval_and_on_job_changes(state_dir: Path) -> None:
    config = PipelineConfig(
        jobs={"nap": JobSpec((sys.executable, "-c", "import time; time.sleep(30)"))}
    )
    link = await open_local_link(state_dir, config)
    try:
        await link.request("snapshot.watch", WatchParams(interval_s=30.0))
        first = await next_snapshot(link, 10)
        started = time.monotonic()
        job = await link.request("jobs.launch", LaunchParams("nap"), idempotency_key="nap-1")
        pushed = await next_snapshot(link, 10)
        waited = time.monotonic() - started
        await link.request("snapshot.watch", WatchParams(interval_s=0.2))
        ticks = [await next_snapshot(link, 5) for _ in range(3)]
    finally:
        await link.close()
    assert first.data.jobs == ()
    assert [j.id for j in pushed.data.jobs] == [job.id]
    assert waited < 10, "the launch pushed a snapshot long before the 30 s interval"
    assert ticks[-1].data.taken_at > ticks[0].data.taken_at
