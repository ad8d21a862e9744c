"""Ping latency while the agent stops 8 runs at once (goal: p99 < 100 ms), against an idle agent.

Eight jobs ignore their stop signal (SIGINT), so each stop waits out its grace, walking /proc for
the job's group, then sends SIGTERM. The console pings the agent on the same link all the while,
one ping after another, as its keepalive does. Before #26 the agent answered one request at a time
and walked /proc on its event loop: pings queued behind the stops and the console cut the link.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    PING,
    JobInfo,
    JobSpec,
    LaunchParams,
    PingParams,
    PipelineConfig,
    StopParams,
    StopResult,
)
from agent.state import StatePaths
from console.link.agent_link import AgentLink
from tests.support.operations import local_link

RUNS = 8
GRACE_S = 3.0
IDLE_PINGS = 300
GOAL_P99_MS = 100.0
DEAF = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def pipeline() -> PipelineConfig:
    spec = JobSpec((sys.executable, "-c", DEAF), stop_signal="SIGINT", grace_s=GRACE_S)
    return PipelineConfig(jobs={f"deaf{n}": spec for n in range(RUNS)})


async def ping_ms(link: AgentLink) -> float:
    sent = time.perf_counter()
    await link.call(PING, PingParams(), timeout_s=60)
    return (time.perf_counter() - sent) * 1000


async def launch_ready(link: AgentLink) -> list[JobInfo]:
    jobs: list[JobInfo] = []
    for n in range(RUNS):
        jobs.append(await link.call(JOBS_LAUNCH, LaunchParams(f"deaf{n}"), idempotency_key=f"l{n}"))
    logs = [Path(job.log_path or "") for job in jobs]
    while not all(log.is_file() and "ready" in log.read_text() for log in logs):
        await asyncio.sleep(0.05)
    return jobs


async def pings_while_stopping(link: AgentLink, jobs: list[JobInfo]) -> tuple[list[float], float]:
    """Latencies of back-to-back pings until every stop has answered, and the stops' wall time."""
    started = time.perf_counter()
    stops = asyncio.gather(*(
        link.call(JOBS_STOP, StopParams(job.id), idempotency_key=f"s{job.id}", timeout_s=120)
        for job in jobs
    ))  # fmt: skip
    latencies: list[float] = []
    while not stops.done():
        latencies.append(await ping_ms(link))
    results: list[StopResult] = await stops
    outcomes = sorted({result.outcome for result in results})
    print(f"stops: {len(results)} answered in {time.perf_counter() - started:.1f} s ({outcomes})")
    return latencies, time.perf_counter() - started


def figures(label: str, latencies: list[float]) -> float:
    p99 = statistics.quantiles(latencies, n=100)[98]
    print(
        f"{label}: {len(latencies)} pings, p50 {statistics.median(latencies):.2f} ms, "
        f"p99 {p99:.2f} ms, max {max(latencies):.2f} ms"
    )
    return p99


async def measure(state_dir: Path) -> None:
    async with local_link(state_dir, pipeline()) as link:
        figures("idle agent", [await ping_ms(link) for _ in range(IDLE_PINGS)])
        jobs = await launch_ready(link)
        latencies, _ = await pings_while_stopping(link, jobs)
        p99 = figures(f"while stopping {RUNS} runs (grace {GRACE_S:.0f} s each)", latencies)
        verdict = "met" if p99 < GOAL_P99_MS else "MISSED"
        print(f"goal p99 < {GOAL_P99_MS:.0f} ms while stopping: {verdict}")


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        state_dir = Path(folder) / "state"
        try:
            asyncio.run(measure(state_dir))
        finally:
            stop_daemon(StatePaths(state_dir))
