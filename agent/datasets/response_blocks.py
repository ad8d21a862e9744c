"""The response lines of a block of complete lines, read where they lie in it.

A cold scan reads a file in blocks of 64-256 KB (`file_lines`); cutting each block into
lines copies every byte once more, and checking each line's id list on its own pays the C
library's start-up for every line. Here each line is read in place (`response_lines.read_fast`)
and the grammar faults of all the block's id lists are searched for once (`id_lists`), so a
line costs a few microseconds whatever its length. A line the fast reading does not take is
handed over as bytes, for the full check its reader makes (a corrupt line, a glued one, a
record in another layout): this module decides nothing on its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from agent.datasets.id_lists import IdLists
from agent.datasets.response_lines import MAX_LINE_BYTES, FastLine, read_fast


def scan_block(block: bytes, block_offset: int) -> Iterator[tuple[int, FastLine | bytes]]:
    """(file offset, the response read fast, else the line's bytes) of each non-blank line.

    `block` holds complete lines, each ending in a newline, and starts at `block_offset`.
    """
    lists, find, start = IdLists(block), block.find, 0
    while start < len(block):
        end = find(b"\n", start)
        end = len(block) if end < 0 else end
        fast = read_fast(lists, start, end) if end - start <= MAX_LINE_BYTES else None
        if fast is not None:
            yield block_offset + start, fast
        elif block[start:end].strip():
            yield block_offset + start, block[start:end]
        start = end + 1
