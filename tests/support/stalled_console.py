"""A console that stops reading its socket, a busy one beside it, and the log the first reads back.

Console A connects straight to the daemon's socket, watches snapshots every 0.1 s and follows a
24 MB log, then reads nothing. Console B launches, pings and stops a job over and over: each
answer must come in its normal time. When A reads again it must find its log bytes without a
gap, then a `log_lagged` notice naming the offset to resume from; resuming from there must give
the rest of the log. The slow_client test and fault scenario share these parts and checks.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
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
    PingParams,
    PipelineConfig,
    StopParams,
)
from agent.serving.session import LAG_CUTOFF_S
from console.link.agent_link import AgentLink
from tests.support.raw_wire import request_line

T = TypeVar("T")
LOG_LINES = 200_000
RESUME_TIMEOUT_S = 60.0


def big_log(path: Path) -> bytes:
    """Write a 24 MB log to `path`; its bytes."""
    data = b"".join(b"line %06d %s\n" % (i, b"x" * 100) for i in range(LOG_LINES))
    path.write_bytes(data)
    return data


def busy_pipeline(log: Path) -> PipelineConfig:
    """The pipeline B works on: a job that sleeps, and `log` as the server's log A follows."""
    sleeper = JobSpec((sys.executable, "-c", "import time; time.sleep(300)"), grace_s=1)
    return PipelineConfig(sglang_log=str(log), jobs={"sleeper": sleeper})


async def keep_busy(link: AgentLink, seconds: float, limit_s: float, took: list[float]) -> None:
    """B's launch, ping and stop, over and over for `seconds`, each one's time added to `took`.

    A request that takes over `limit_s` raises TimeoutError (a lost link, LinkError).
    """
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        began = time.monotonic()
        launch = link.call(JOBS_LAUNCH, LaunchParams("sleeper"), idempotency_key=f"l{began}")
        job: JobInfo = await _timed(launch, limit_s, took)
        await _timed(link.call(PING, PingParams()), limit_s, took)
        await _timed(
            link.call(JOBS_STOP, StopParams(job.id), idempotency_key=f"s{began}"), limit_s, took
        )


def stalled_console(state_dir: Path) -> socket.socket:
    """Console A on the daemon's socket: hello, a snapshot watch and the log subscribed, then
    nothing read."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(state_dir / "agent.sock"))
    hello = {"protocol_version": PROTOCOL_VERSION, "client_version": "stalled"}
    sock.sendall(request_line(1, "hello", hello) + request_line(2, "snapshot.watch", {"interval_s": 0.1})
                 + request_line(3, "logs.subscribe", {"name": "sglang", "offset": 0}))  # fmt: skip
    return sock


async def read_again(
    sock: socket.socket,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A reads its socket again."""
    sock.setblocking(False)
    return await asyncio.open_unix_connection(sock=sock, limit=2**24)


@dataclass
class LogReadBack:
    """The log text A has received, and each chunk that did not start where the text ended."""

    text: bytes = b""
    gaps: list[tuple[int, int]] = field(default_factory=list)
    """(where a chunk started, the bytes A had then): a gap, or a repeat when it started earlier."""

    def add(self, chunk: dict[str, Any]) -> None:
        """One `log` event's data."""
        if chunk["start_offset"] != len(self.text):
            self.gaps.append((chunk["start_offset"], len(self.text)))
        self.text += str(chunk["text"]).encode()


async def read_until_lagged(
    reader: asyncio.StreamReader, log: LogReadBack
) -> dict[str, Any] | None:
    """A's log chunks into `log` up to the `log_lagged` notice, whose data it returns (None when
    none comes)."""
    while True:
        try:
            line = await asyncio.wait_for(reader.readline(), LAG_CUTOFF_S * 3)
        except TimeoutError:
            return None
        message = json.loads(line)
        if message.get("event") == "log":
            log.add(message["data"])
        elif message.get("event") == "log_lagged":
            data: dict[str, Any] = message["data"]
            return data


async def resume(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lagged: dict[str, Any],
    log: LogReadBack, size: int,
) -> None:  # fmt: skip
    """Subscribe again from the offset `lagged` names, and read into `log` until it holds
    `size` bytes (or RESUME_TIMEOUT_S passes)."""
    params = {"name": "sglang", "offset": lagged["resume_offset"], "inode": lagged["inode"]}
    writer.write(request_line(4, "logs.subscribe", params))
    deadline = time.monotonic() + RESUME_TIMEOUT_S
    while len(log.text) < size and time.monotonic() < deadline:
        message = json.loads(await asyncio.wait_for(reader.readline(), 30))
        if message.get("event") == "log":
            log.add(message["data"])


async def _timed(call: Awaitable[T], limit_s: float, took: list[float]) -> T:
    began = time.monotonic()
    answer = await asyncio.wait_for(call, limit_s)
    took.append(time.monotonic() - began)
    return answer
