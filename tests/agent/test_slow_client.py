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
import termios
from pathlib import Path

import pytest

from agent.serving.outbox import Outbox
from agent.serving.session import LAG_CUTOFF_S
from console.link.local_link import open_local_link
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

NORMAL_S = 5.0
"""Far above a ping's or a launch's time on a loaded machine; a stalled agent never answers."""


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


@pytest.mark.slow
async def test_a_console_that_stops_reading_delays_no_one_and_resumes_without_a_gap(
    tmp_path: Path, state_dir: Path
) -> None:
    data = big_log(tmp_path / "sglang.log")
    console_b = await open_local_link(state_dir, busy_pipeline(tmp_path / "sglang.log"))
    sock = stalled_console(state_dir)  # read by no one for now
    writer: asyncio.StreamWriter | None = None
    try:
        await until_stalled(sock)
        took: list[float] = []
        await keep_busy(console_b, LAG_CUTOFF_S + 2, NORMAL_S, took)  # across the cut-off too
        assert max(sum(took[i : i + 3]) for i in range(0, len(took), 3)) < NORMAL_S
        reader, writer = await read_again(sock)
        answers = 0
        while answers < 3:  # A's hello, watch and subscribe answers, before any log chunk
            message = json.loads(await reader.readline())
            if "result" in message:
                answers += 1
            else:  # the watch's first pushes may come before the subscribe's answer
                assert message.get("event") == "snapshot", message
        log = LogReadBack()
        lagged = await read_until_lagged(reader, log)
        assert lagged is not None
        assert log.gaps == [], "a gap or a repeat"
        assert lagged["name"] == "sglang"
        assert lagged["resume_offset"] == len(log.text) < len(data)
        assert f"subscribe again from byte {len(log.text)}" in lagged["reason"]
        await resume(reader, writer, lagged, log, len(data))
        assert log.gaps == []
        assert log.text == data
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
