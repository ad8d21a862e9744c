"""A console that stops reading its socket delays no one, costs bounded memory, and loses nothing.

Console A connects straight to the daemon's socket, subscribes to a 24 MB log, watches snapshots
and stops reading. Console B launches and stops jobs (events for A too) and pings meanwhile: each
answer must come in its normal time. When A reads again it finds its log chunks without a gap,
then a `log_lagged` notice with the offset to resume from, and resuming from there gets the rest.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import json
import socket
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

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
from agent.serving.outbox import Outbox
from agent.serving.session import LAG_CUTOFF_S
from console.link.local_link import open_local_link

LOG_LINES = 200_000
NORMAL_S = 5.0
"""Far above a ping's or a launch's time on a loaded machine; a stalled agent never answers."""


def big_log(path: Path) -> bytes:
    data = b"".join(b"line %06d %s\n" % (i, b"x" * 100) for i in range(LOG_LINES))
    path.write_bytes(data)
    return data


def request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"id": request_id, "method": method, "params": params}).encode() + b"\n"


def unread_bytes(sock: socket.socket) -> int:
    waiting = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, waiting)
    return waiting[0]


async def until_stalled(sock: socket.socket) -> None:
    """Until the daemon has filled A's socket: the unread bytes stop growing."""
    seen: list[int] = []
    while len(seen) < 4 or len(set(seen[-4:])) > 1 or seen[-1] == 0:
        seen.append(unread_bytes(sock))
        await asyncio.sleep(0.1)


async def read_until_lagged(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, Any]]:
    """A's log text in order, up to the lag notice, which is returned too."""
    text = b""
    while True:
        line = await asyncio.wait_for(reader.readline(), LAG_CUTOFF_S * 3)
        message = json.loads(line)
        if message.get("event") == "log":
            assert message["data"]["start_offset"] == len(text), "a gap or a repeat"
            text += message["data"]["text"].encode()
        elif message.get("event") == "log_lagged":
            return text, message["data"]


@pytest.mark.slow
async def test_a_console_that_stops_reading_delays_no_one_and_resumes_without_a_gap(
    tmp_path: Path, state_dir: Path
) -> None:
    data = big_log(tmp_path / "sglang.log")
    sleeper = JobSpec((sys.executable, "-c", "import time; time.sleep(300)"), grace_s=1)
    pipeline = PipelineConfig(sglang_log=str(tmp_path / "sglang.log"), jobs={"sleeper": sleeper})
    console_b = await open_local_link(state_dir, pipeline)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # read by no one for now
    sock.connect(str(state_dir / "agent.sock"))
    writer: asyncio.StreamWriter | None = None
    try:
        hello = {"protocol_version": PROTOCOL_VERSION, "client_version": "stalled"}
        sock.sendall(request(1, "hello", hello) + request(2, "snapshot.watch", {"interval_s": 0.1})
                     + request(3, "logs.subscribe", {"name": "sglang", "offset": 0}))  # fmt: skip
        await until_stalled(sock)
        started, slowest = time.monotonic(), 0.0
        while time.monotonic() - started < LAG_CUTOFF_S + 2:  # across the cut-off too
            began = time.monotonic()
            job: JobInfo = await asyncio.wait_for(console_b.call(
                JOBS_LAUNCH, LaunchParams("sleeper"), idempotency_key=f"l{began}"), NORMAL_S)  # fmt: skip
            await asyncio.wait_for(console_b.call(PING, PingParams()), NORMAL_S)
            await asyncio.wait_for(console_b.call(
                JOBS_STOP, StopParams(job.id), idempotency_key=f"s{began}"), NORMAL_S)  # fmt: skip
            slowest = max(slowest, time.monotonic() - began)
        assert slowest < NORMAL_S
        sock.setblocking(False)
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=2**24)
        answers = 0
        while answers < 3:  # A's hello, watch and subscribe answers, before any log chunk
            message = json.loads(await reader.readline())
            if "result" in message:
                answers += 1
            else:  # the watch's first pushes may come before the subscribe's answer
                assert message.get("event") == "snapshot", message
        text, lagged = await read_until_lagged(reader)
        assert lagged["name"] == "sglang"
        assert lagged["resume_offset"] == len(text) < len(data)
        assert f"subscribe again from byte {len(text)}" in lagged["reason"]
        writer.write(request(4, "logs.subscribe", {"name": "sglang", "offset": len(text),
                                                   "inode": lagged["inode"]}))  # fmt: skip
        while len(text) < len(data):
            message = json.loads(await asyncio.wait_for(reader.readline(), 30))
            if message.get("event") == "log":
                assert message["data"]["start_offset"] == len(text)
                text += message["data"]["text"].encode()
        assert text == data
    finally:
        if writer is not None:
            writer.close()
            await writer.wait_closed()
        sock.close()
        await console_b.close()


class StuckWriter:
    """A socket whose other end never reads: writes pile up, drain never returns."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.never = asyncio.Event()

    def write(self, data: bytes) -> None:
        self.written.append(data)

    async def drain(self) -> None:
        await self.never.wait()


async def test_an_outbox_coalesces_snapshots_and_cuts_off_a_console_that_fell_too_far() -> None:
    writer, reasons = StuckWriter(), list[str]()
    outbox = Outbox(writer, reasons.append, limit_bytes=1000)
    writing = asyncio.create_task(outbox.run())
    outbox.offer(b"first event\n")
    await asyncio.wait_for(outbox.wait_for_room(0, 5), 5)  # taken by the writer, which is stuck
    for number in range(5):
        outbox.put_snapshot(b"snapshot %d\n" % number)
    assert outbox.snapshot_pending
    assert outbox.offer(b"e" * 600)
    assert not await outbox.wait_for_room(100, 0.2)
    assert not outbox.offer(b"e" * 600)  # no room: cut off, never waited for
    assert outbox.closed
    assert reasons == ["its console stopped reading (600 bytes unsent)"]
    assert writer.written == [b"first event\n"]
    writing.cancel()


async def test_an_outbox_sends_only_the_latest_snapshot_when_the_console_catches_up() -> None:
    writer = StuckWriter()
    writer.never.set()  # drains at once
    outbox = Outbox(writer, lambda _: None)
    for number in range(5):
        outbox.put_snapshot(b"snapshot %d\n" % number)
    await outbox.put(b"response\n")
    writing = asyncio.create_task(outbox.run())
    await asyncio.wait_for(outbox.wait_for_room(0, 5), 5)
    while outbox.snapshot_pending:
        await asyncio.sleep(0)
    assert writer.written == [b"response\n", b"snapshot 4\n"]
    writing.cancel()
