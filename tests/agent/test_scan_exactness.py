"""The agent's counts of a responses file are the full check's, whatever the file holds.

`ResponseCounter` reads the runner's lines in place, a block at a time; the same counter with
every fast reading switched off (each line through json.loads, as the definition says) is the
reference: responses, tokens, corrupt lines, their offsets and first reason, and the ids seen
must all be the same, for files of valid, repeated, hostile, torn and glued lines.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent.datasets.response_counter as response_counter
import agent.datasets.response_lines as response_lines
from agent.datasets.file_lines import LineBlock
from agent.datasets.tracker import ResponseCounter
from tests.support.response_line_strategies import any_line


def every_line_bytes(block: bytes, block_offset: int) -> Iterator[tuple[int, bytes]]:
    """scan_block without its fast reading: each non-blank line, as bytes."""
    for offset, line in LineBlock(block_offset, block).lines():
        if line.strip():
            yield offset, line


def counted(path: Path) -> dict[str, Any]:
    counter = ResponseCounter(path)
    counter.update()
    return {
        "responses": counter.responses, "tokens": counter.tokens,
        "truncated": counter.truncated_responses,
        "corrupt": (counter.corrupt_lines, counter.corrupt_offsets, counter.first_corrupt_reason),
        "ids": counter.seen_ids, "offset": counter.offset, "torn": counter.torn_tail_bytes,
    }  # fmt: skip


def counted_by_json_loads(path: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(response_counter, "scan_block", every_line_bytes)
        patch.setattr(response_lines, "_parse_fast", lambda line: None)
        return counted(path)


def runner_line(rid: str, ids: list[int], finish: str = "stop") -> bytes:
    return json.dumps(
        {"id": rid, "output_ids": ids, "completion_tokens": len(ids), "finish_reason": finish},
        separators=(",", ":"),
    ).encode()


files = st.lists(
    st.one_of(
        any_line,
        st.builds(
            runner_line,
            st.sampled_from(["p1", "p2", "p3"]),
            st.lists(st.integers(0, 99)),
            st.sampled_from(["stop", "length"]),
        ),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(files, st.binary(max_size=30))
def test_the_counts_are_json_loads_counts(lines: list[bytes], tail: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "raw_responses.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in lines) + tail.replace(b"\n", b""))
        assert counted(path) == counted_by_json_loads(path)


def test_blocks_of_many_lines_count_as_one_by_one(tmp_path: Path) -> None:
    """Lines spread over several reads, repeated ids among them, and a few faults."""
    path = tmp_path / "raw_responses.jsonl"
    lines = [runner_line(f"p{i % 300}", list(range(i % 50, i % 50 + 3000))) for i in range(600)]
    lines[17] = lines[17].replace(b"[", b"[00,", 1)  # corrupt: a leading zero
    lines[400] = runner_line("late", [1, 2])[:-1] + b',"output_ids":[1],"completion_tokens":null}'
    path.write_bytes(b"".join(line + b"\n" for line in lines))  # line 400: JSON takes the last
    reference = counted_by_json_loads(path)
    assert counted(path) == reference
    assert (reference["responses"], reference["corrupt"][0]) == (301, 1)
    assert reference["tokens"] == 299 * 3000 + 3000 + 1
