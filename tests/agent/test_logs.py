"""Logs by byte offset: exact continuation, resets on truncation and replacement, capped lines."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from agent.logs import MAX_LINE_CHARS, NamedLog, read_chunk
from agent.protocol import (
    LOGS_LIST,
    LOGS_READ,
    LOGS_SUBSCRIBE,
    LogChunk,
    LogReadParams,
    LogsList,
    LogsParams,
    LogSubscribeParams,
    PipelineConfig,
)
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.operations import local_link


def test_chunks_continue_exactly_and_wait_for_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "sglang.log"
    path.write_bytes(b"one\ntwo\nthr")
    log = NamedLog("sglang", path)
    first = read_chunk(log, 0, None)
    assert (first.text, first.start_offset, first.end_offset) == ("one\ntwo\n", 0, 8)
    with path.open("ab") as handle:
        handle.write(b"ee\nfour\n")
    second = read_chunk(log, first.end_offset, first.inode)
    assert second.text == "three\nfour\n"
    assert second.end_offset == path.stat().st_size
    assert not second.reset


def test_truncation_and_replacement_are_resets(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_bytes(b"a\nb\nc\n")
    log = NamedLog("job", path)
    end = read_chunk(log, 0, None)
    path.write_bytes(b"x\n")
    cut = read_chunk(log, end.end_offset, end.inode)
    assert (cut.reset, cut.text, cut.start_offset) == (True, "x\n", 0)
    replacement = tmp_path / "new.log"
    replacement.write_bytes(b"y\nz\n")
    os.replace(replacement, path)
    replaced = read_chunk(log, cut.end_offset, cut.inode)
    assert (replaced.reset, replaced.text) == (True, "y\nz\n")


def test_a_huge_line_is_capped_but_offsets_count_every_byte(tmp_path: Path) -> None:
    path = tmp_path / "flood.log"
    path.write_bytes(b"x" * (MAX_LINE_CHARS * 3) + b"\nnext\n")
    chunk = read_chunk(NamedLog("flood", path), 0, None)
    assert chunk.end_offset == path.stat().st_size
    first, second = chunk.text.split("\n")[:2]
    assert len(first) < MAX_LINE_CHARS + 60
    assert "more characters cut" in first
    assert second == "next"


def test_a_negative_offset_starts_at_a_line_boundary_near_the_end(tmp_path: Path) -> None:
    path = tmp_path / "tail.log"
    path.write_bytes(b"".join(f"line {i}\n".encode() for i in range(100)))
    chunk = read_chunk(NamedLog("tail", path), -20, None)
    assert chunk.text.startswith("line ")
    assert chunk.text.endswith("line 99\n")
    assert chunk.text.count("\n") == 2


async def collect_until(link: AgentLink, size: int, timeout_s: float = 15) -> list[LogChunk]:
    chunks: list[LogChunk] = []
    deadline = time.monotonic() + timeout_s
    while (not chunks or chunks[-1].end_offset < size) and time.monotonic() < deadline:
        event = await asyncio.wait_for(link.events.get(), timeout_s)
        if isinstance(event.data, LogChunk):
            chunks.append(event.data)
    return chunks


async def test_a_subscription_resumes_after_a_reconnect_without_gap_or_duplicate(
    tmp_path: Path, state_dir: Path
) -> None:
    path = tmp_path / "sglang.log"
    path.write_text(
        "".join(
            f"[2026-11-29 10:00:{i:02d} TP0] Decode batch, #running-req: {i}\n" for i in range(30)
        )
    )
    config = PipelineConfig(sglang_log=str(path))
    link = await open_local_link(state_dir, config)
    listing: LogsList = await link.call(LOGS_LIST, LogsParams())
    assert {log.name for log in listing.logs} >= {"agent", "sglang"}
    await link.call(LOGS_SUBSCRIBE, LogSubscribeParams("sglang", 0))
    received = await collect_until(link, path.stat().st_size)
    await link.close()
    with path.open("a") as handle:  # while no console is connected
        handle.write("".join(f"later {i}\n" for i in range(500)))
        handle.write("torn tail without newline")

    async with local_link(state_dir, config) as again:
        await again.call(
            LOGS_SUBSCRIBE,
            LogSubscribeParams("sglang", received[-1].end_offset, received[-1].inode),
        )
        with path.open("a") as handle:
            handle.write(" completed\nlast line\n")
        received += await collect_until(again, path.stat().st_size)
        window: LogChunk = await again.call(LOGS_READ, LogReadParams("sglang", -10))

    assert "".join(chunk.text for chunk in received) == path.read_text()
    assert all(a.end_offset == b.start_offset for a, b in zip(received, received[1:], strict=False))
    assert window.text == "last line\n"
