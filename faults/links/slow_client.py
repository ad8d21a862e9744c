"""A console that stops reading its socket: no one else waits, memory stays bounded, nothing lost.

Console A connects to a real daemon's socket, watches snapshots every 0.1 s, follows a 24 MB log
and then reads nothing. Console B meanwhile launches and stops jobs (each a job event for A too)
and pings, as it did before A stalled; its latencies are compared with that baseline. When A
reads again it must find its log bytes without a gap, then a `log_lagged` notice naming the
exact offset to resume from; resuming from there must give the rest of the log, byte for byte.
The daemon's resident memory is read before and during the stall.

Counts: faults are stalls; attempted/acked are B's requests; lost and duplicated are log bytes
missing from or repeated in what A received.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from agent.serving.session import LAG_CUTOFF_S
from console.link.agent_link import AgentLink, LinkError
from faults.harness.agents import daemon_pid, local_agent
from faults.harness.memory import resident_mb
from faults.result import Scale, ScenarioResult
from tests.support.stalled_console import (
    LogReadBack,
    big_log,
    busy_pipeline,
    keep_busy,
    read_again,
    read_until_lagged,
    resume,
    stalled_console,
)

TITLE = "Slow client: a console that stops reading its socket"
ANSWER_LIMIT_S = 5.0
"""A request of B slower than this fails the scenario (a blocked agent never answers)."""
RSS_GROWTH_LIMIT_MB = 64.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Measure B alone, then B while A is stalled, then A's catch-up and resume."""
    result = ScenarioResult("slow_client", TITLE, seed)
    log = workdir / "sglang.log"
    data = big_log(log)
    state_dir = workdir / "state"
    async with local_agent(state_dir, busy_pipeline(log)) as console_b:
        baseline = await _requests(console_b, 3.0, result)
        rss_before = resident_mb(daemon_pid(state_dir))
        for _ in range(scale.pick(3, 1)):
            result.faults += 1
            await _stall(state_dir, console_b, data, baseline, result)
        rss_growth = resident_mb(daemon_pid(state_dir)) - rss_before
    result.notes.append(
        f"B's requests alone: p50 {statistics.median(baseline) * 1000:.0f} ms; daemon memory grew "
        f"{rss_growth:.0f} MB over the stalls (limit {RSS_GROWTH_LIMIT_MB:.0f} MB)"
    )
    if rss_growth > RSS_GROWTH_LIMIT_MB:
        result.violate(f"the daemon grew by {rss_growth:.0f} MB while a console was stalled")
    return result


async def _requests(link: AgentLink, seconds: float, result: ScenarioResult) -> list[float]:
    """B's launch, ping and stop, over and over for `seconds`; each one's time."""
    took: list[float] = []
    try:
        await keep_busy(link, seconds, ANSWER_LIMIT_S, took)
    except (asyncio.TimeoutError, LinkError) as exc:
        result.attempted += 1
        result.violate(f"B's request failed or took over {ANSWER_LIMIT_S} s: {exc!r}")
    result.attempted += len(took)
    result.acknowledged += len(took)
    return took


async def _stall(
    state_dir: Path,
    console_b: AgentLink,
    data: bytes,
    baseline: list[float],
    result: ScenarioResult,
) -> None:
    sock = stalled_console(state_dir)
    stalled_at = time.monotonic()
    during = await _requests(console_b, LAG_CUTOFF_S + 2, result)
    _compare(baseline, during, result)
    reader, writer = await read_again(sock)
    try:
        await _catch_up(reader, writer, data, stalled_at, result)
    finally:
        writer.close()
        await writer.wait_closed()


def _compare(baseline: list[float], during: list[float], result: ScenarioResult) -> None:
    if not during:
        return
    p50_alone, p50_during = statistics.median(baseline), statistics.median(during)
    result.detection_s.append(max(during))
    result.notes.append(
        f"B's requests while A was stalled: p50 {p50_during * 1000:.0f} ms, max "
        f"{max(during) * 1000:.0f} ms ({len(during)} requests)"
    )
    if p50_during > 3 * p50_alone + 0.2:
        result.violate(
            f"B slowed down: p50 {p50_alone:.3f} s alone, {p50_during:.3f} s with A stalled"
        )


async def _catch_up(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes, stalled_at: float,
    result: ScenarioResult,
) -> None:  # fmt: skip
    log = LogReadBack()
    lagged = await read_until_lagged(reader, log)
    if lagged is None:
        _count_gaps(log, result)
        result.violate("A never got a log_lagged notice")
        return
    result.recovery_s.append(time.monotonic() - stalled_at)
    if lagged["resume_offset"] != len(log.text):
        result.violate(f"log_lagged names byte {lagged['resume_offset']}, A has {len(log.text)}")
    await resume(reader, writer, lagged, log, len(data))
    _count_gaps(log, result)
    if log.text != data:
        result.lost += max(0, len(data) - len(log.text))
        result.violate(
            f"A's log after resuming: {len(log.text):,} bytes, want the file's {len(data):,}"
        )


def _count_gaps(log: LogReadBack, result: ScenarioResult) -> None:
    """Each gap in what A read: bytes lost, or repeated when a chunk started early."""
    for started, had in log.gaps:
        if started > had:
            result.lost += started - had
        else:
            result.duplicated += had - started
        result.violate(f"a log chunk starts at {started}, A had {had} bytes")
