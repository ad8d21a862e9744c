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
import json
import socket
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TypeVar

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    PING,
    PROTOCOL_VERSION,
    JobInfo,
    JobSpec,
    LaunchParams,
    Method,
    PingParams,
    PipelineConfig,
    StopParams,
)
from agent.serving.session import LAG_CUTOFF_S
from console.link.agent_link import AgentLink, LinkError
from console.link.local_link import open_local_link
from faults._bad_input_wire import daemon_pid
from faults._hostile_common import resident_mb, shut_down_agent
from faults.result import Scale, ScenarioResult

P = TypeVar("P")
R = TypeVar("R")

TITLE = "Slow client: a console that stops reading its socket"
LOG_LINES = 200_000
ANSWER_LIMIT_S = 5.0
"""A request of B slower than this fails the scenario (a blocked agent never answers)."""
RSS_GROWTH_LIMIT_MB = 64.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Measure B alone, then B while A is stalled, then A's catch-up and resume."""
    result = ScenarioResult("slow_client", TITLE, seed)
    log = workdir / "sglang.log"
    data = b"".join(b"line %06d %s\n" % (i, b"x" * 100) for i in range(LOG_LINES))
    log.write_bytes(data)
    sleeper = JobSpec((sys.executable, "-c", "import time; time.sleep(300)"), grace_s=1)
    state_dir = workdir / "state"
    try:
        console_b = await open_local_link(
            state_dir, PipelineConfig(sglang_log=str(log), jobs={"sleeper": sleeper})
        )
        try:
            baseline = await _requests(console_b, 3.0, result)
            rss_before = resident_mb(daemon_pid(state_dir))
            for _ in range(scale.pick(3, 1)):
                result.faults += 1
                await _stall(state_dir, console_b, data, baseline, result)
            rss_growth = resident_mb(daemon_pid(state_dir)) - rss_before
        finally:
            await console_b.close()
    finally:
        await shut_down_agent(state_dir)
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
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        began = time.monotonic()
        try:
            job: JobInfo = await _timed(
                link, JOBS_LAUNCH, LaunchParams("sleeper"), f"l{began}", result, took
            )
            await _timed(link, PING, PingParams(), None, result, took)
            await _timed(link, JOBS_STOP, StopParams(job.id), f"s{began}", result, took)
        except (asyncio.TimeoutError, LinkError) as exc:
            result.violate(f"B's request failed or took over {ANSWER_LIMIT_S} s: {exc!r}")
            return took
    return took


async def _timed(
    link: AgentLink,
    method: Method[P, R],
    params: P,
    key: str | None,
    result: ScenarioResult,
    took: list[float],
) -> R:
    result.attempted += 1
    began = time.monotonic()
    answer = await asyncio.wait_for(link.call(method, params, idempotency_key=key), ANSWER_LIMIT_S)
    took.append(time.monotonic() - began)
    result.acknowledged += 1
    return answer


async def _stall(
    state_dir: Path,
    console_b: AgentLink,
    data: bytes,
    baseline: list[float],
    result: ScenarioResult,
) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(state_dir / "agent.sock"))
    hello = {"protocol_version": PROTOCOL_VERSION, "client_version": "stalled"}
    sock.sendall(_line(1, "hello", hello) + _line(2, "snapshot.watch", {"interval_s": 0.1})
                 + _line(3, "logs.subscribe", {"name": "sglang", "offset": 0}))  # fmt: skip
    stalled_at = time.monotonic()
    during = await _requests(console_b, LAG_CUTOFF_S + 2, result)
    _compare(baseline, during, result)
    sock.setblocking(False)
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=2**24)
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
    text, lagged = await _read_until_lagged(reader, result)
    if lagged is None:
        result.violate("A never got a log_lagged notice")
        return
    result.recovery_s.append(time.monotonic() - stalled_at)
    if lagged["resume_offset"] != len(text):
        result.violate(f"log_lagged names byte {lagged['resume_offset']}, A has {len(text)}")
    writer.write(_line(9, "logs.subscribe", {"name": "sglang", "offset": lagged["resume_offset"],
                                            "inode": lagged["inode"]}))  # fmt: skip
    deadline = time.monotonic() + 60
    while len(text) < len(data) and time.monotonic() < deadline:
        message = json.loads(await asyncio.wait_for(reader.readline(), 30))
        if message.get("event") == "log":
            text = _append(text, message["data"], result)
    if text != data:
        result.lost += max(0, len(data) - len(text))
        result.violate(
            f"A's log after resuming: {len(text):,} bytes, want the file's {len(data):,}"
        )


async def _read_until_lagged(
    reader: asyncio.StreamReader, result: ScenarioResult
) -> tuple[bytes, dict[str, Any] | None]:
    text = b""
    while True:
        try:
            line = await asyncio.wait_for(reader.readline(), LAG_CUTOFF_S * 3)
        except asyncio.TimeoutError:
            return text, None
        message = json.loads(line)
        if message.get("event") == "log":
            text = _append(text, message["data"], result)
        elif message.get("event") == "log_lagged":
            return text, message["data"]


def _append(text: bytes, chunk: dict[str, Any], result: ScenarioResult) -> bytes:
    if chunk["start_offset"] != len(text):
        gap = chunk["start_offset"] - len(text)
        if gap > 0:
            result.lost += gap
        else:
            result.duplicated += -gap
        result.violate(f"a log chunk starts at {chunk['start_offset']}, A had {len(text)} bytes")
    return text + str(chunk["text"]).encode()


def _line(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"id": request_id, "method": method, "params": params}).encode() + b"\n"
