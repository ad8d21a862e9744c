"""Lines read a cache-sized read at a time, and a whole window only for a line that needs it."""

from __future__ import annotations

import io

from agent.datasets.file_lines import READ_BYTES, LineBlock, LineBlocks, OverlongLine


def read_all(
    data: bytes, window_bytes: int = 4 * READ_BYTES
) -> tuple[list[tuple[int, bytes]], LineBlocks]:
    blocks = LineBlocks(io.BytesIO(data), 0, len(data), window_bytes=window_bytes)
    lines: list[tuple[int, bytes]] = []
    for item in blocks:
        assert isinstance(item, LineBlock)
        lines += item.lines()
    return lines, blocks


def test_a_line_longer_than_a_read_but_within_the_window_is_read_whole() -> None:
    long = b"7" * (READ_BYTES * 2 + 5)
    lines, blocks = read_all(b"a\n" + long + b"\nb\n")
    assert lines == [(0, b"a"), (2, long), (3 + len(long), b"b")]
    assert blocks.offset == len(long) + 5


def test_a_torn_tail_longer_than_a_read_waits_for_its_newline() -> None:
    lines, blocks = read_all(b"a\n" + b"7" * (READ_BYTES + 3))
    assert lines == [(0, b"a")]
    assert blocks.offset == 2


def test_many_short_lines_span_reads_without_losing_one() -> None:
    data = b"".join(b"%d\n" % i for i in range(READ_BYTES // 3))
    lines, _ = read_all(data)
    assert [line for _, line in lines] == data.split(b"\n")[:-1]
    assert all(data[offset : offset + len(line)] == line for offset, line in lines)


def test_a_line_longer_than_the_window_is_still_overlong() -> None:
    data = b"a\n" + b"7" * (READ_BYTES * 3) + b"\nb\n"
    items = list(LineBlocks(io.BytesIO(data), 0, len(data), window_bytes=READ_BYTES * 2))
    assert items[0] == LineBlock(0, b"a\n")
    assert items[1] == OverlongLine(2, READ_BYTES * 3)
    assert items[2] == LineBlock(READ_BYTES * 3 + 3, b"b\n")
