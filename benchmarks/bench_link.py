"""Round trip through the real attach bridge and daemon: ping latency p50/p95, snapshot rate."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import PING, SNAPSHOT, PingParams, SnapshotParams
from agent.state import StatePaths
from console.link.local_link import open_local_link

PINGS = 500


async def measure(state_dir: Path) -> None:
    started = time.perf_counter()
    link = await open_local_link(state_dir, None)
    print(f"cold start (daemon spawn + hello): {(time.perf_counter() - started) * 1000:.0f} ms")
    try:
        latencies = []
        for _ in range(PINGS):
            sent = time.perf_counter()
            await link.call(PING, PingParams())
            latencies.append((time.perf_counter() - sent) * 1000)
        quantiles = statistics.quantiles(latencies, n=20)
        print(
            f"ping round trip: p50 {statistics.median(latencies):.2f} ms, p95 {quantiles[18]:.2f} ms"
        )
        start = time.perf_counter()
        for _ in range(PINGS):
            await link.call(SNAPSHOT, SnapshotParams())
        print(f"snapshot requests: {PINGS / (time.perf_counter() - start):,.0f}/s")
    finally:
        await link.close()


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        state_dir = Path(folder) / "state"
        asyncio.run(measure(state_dir))
        stop_daemon(StatePaths(state_dir))
