"""Counting the output ids of a responses file for the vocab job: numpy, never torch.

A line is read by the one definition of a response line the agent and the runner use: one that
is not a response (corrupt, too long, another record shape), or that repeats a record id already
counted (a response written twice), is tallied for the report instead. The runner's own lines
are read where they lie in each block read (`response_blocks`: the id list checked against
JSON's grammar at the C library's speed, no line copied); their id lists are joined and parsed
~200 KB of text at a time (`id_text`), and counted in place with `numpy.add.at` (a bincount a
time would make, and zero, V new counts). Any other line takes the full check (`response_lines`,
`glued_lines`), as before. The job's process keeps the memory it frees (`keep_freed_memory`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.datasets.glued_lines import read_line
from agent.datasets.response_blocks import scan_block
from agent.datasets.response_lines import (
    MAX_LINE_BYTES,
    FastLine,
    ResponseLine,
    parse_response_line,
    why_not_response,
)
from agent.host.regular_files import open_regular
from agent.pipeline.id_text import parse_ids
from agent.pipeline.vocab.errors import VocabError

TEXT_BYTES = 192 * 1024
"""Id text parsed at once (about 30,000 ids): its arrays stay in the CPU's cache."""
READ_BYTES = 256 * 1024
"""What one read of the file asks for: four times the agent's, with freed memory kept."""
TRIM_BYTES = 32 * 1024 * 1024
"""Freed memory the C library keeps at the top of its heap before it gives any back."""
MMAP_BYTES = 4 * 1024 * 1024
"""Allocations from this size on get pages of their own (given back when freed)."""
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


@dataclass(slots=True)
class LineTally:
    """Complete lines not counted: corrupt (not a response), or repeating a record id."""

    skipped: int = 0
    duplicates: int = 0
    glued: int = 0
    """Corrupt lines holding a torn record glued to a complete one (the complete one counts)."""
    first_skipped: str = ""

    def skip(self, offset: int, reason: Callable[[], str]) -> None:
        """One corrupt line; the reason is worked out for the first only."""
        if not self.skipped:
            self.first_skipped = f"first at byte {offset:,}: {reason()}"
        self.skipped += 1

    def said(self) -> str:
        """What the progress line adds about them."""
        parts = [f"{self.skipped:,} corrupt line(s) ({self.first_skipped})"] if self.skipped else []
        parts += [f"{self.duplicates:,} repeated record id(s)"] if self.duplicates else []
        parts += [f"{self.glued:,} torn record(s) glued to a complete one"] if self.glued else []
        return f"; skipped {' and '.join(parts)}" if parts else ""


def keep_freed_memory() -> None:
    """Ask the C library (glibc's mallopt) to keep the memory this process frees, for reuse.

    Counting makes and frees a few arrays of ~100 KB for every 10,000 ids. glibc gives freed
    memory at the top of its heap back to the kernel once 128 KiB gather there, so the next array
    faults its pages in again: 700,000 page faults, two fifths of a job of 80M tokens. Kept (up to
    TRIM_BYTES), they are reused. For this process only; another C library is left as it is.
    """
    try:
        import ctypes

        mallopt: Any = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):
        return
    mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES)
    mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)


def count_dataset(folder: Path, responses_file: str, counts: Any, tally: LineTally) -> int:
    """Add the dataset's output ids to `counts` (numpy int64[V]; each record id once).

    Returns its tokens; raises VocabError for an id not below V, or for no ids at all.
    """
    import numpy as np

    path = folder / responses_file
    try:
        batches = list_batches(path, tally)
    except OSError as exc:  # a FIFO or a device in its place, or a file that cannot be read
        raise VocabError(f"{folder.name}: {exc}") from None
    total = 0
    for ids in batches:
        largest = int(ids.max())
        if largest >= counts.size:
            raise VocabError(
                f"{folder.name}: token id {largest} is not below the target vocab size {counts.size}"
            )
        np.add.at(counts, ids, 1)
        total += ids.size
    if total == 0:
        raise VocabError(f"{folder.name}: no output ids in {path}")
    return total


def list_batches(path: Path, tally: LineTally) -> Iterator[Any]:
    """The ids (int64 arrays) of the complete lines of `path` kept, TEXT_BYTES of text each."""
    return map(parse_ids, list_texts(path, tally))


def list_texts(path: Path, tally: LineTally) -> Iterator[bytes]:
    """The id texts of `_id_texts`, the file opened (and checked) before the first."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return iter(())
    return _id_texts(handle, tally)


def _id_texts(handle: BinaryIO, tally: LineTally) -> Iterator[bytes]:
    """The id lists of the complete lines kept (`_take_line`, `_keep`), about TEXT_BYTES a time."""
    with handle:
        text, seen = _IdText(), set[str]()
        size = os.fstat(handle.fileno()).st_size
        for item in LineBlocks(handle, 0, size, read_bytes=READ_BYTES):
            if isinstance(item, OverlongLine):
                tally.skip(item.offset, functools.partial(_overlong, item))
                continue
            block = memoryview(item.data)  # the id lists are copied once, into the joined text
            for offset, line in scan_block(item.data, item.offset):
                if isinstance(line, FastLine):
                    ids = line.compacted or block[line.ids_start : line.ids_end]
                    _keep(line.id, ids, seen, text, tally)
                else:
                    _take_line(line, offset, seen, text, tally)
                if text.size >= TEXT_BYTES:
                    yield text.joined()
        if text.size:
            yield text.joined()


class _IdText:
    """The id lists of the lines kept so far, to be parsed together."""

    def __init__(self) -> None:
        self.pieces: list[bytes | memoryview] = []
        self.size = 0

    def add(self, ids: bytes | memoryview) -> None:
        self.pieces.append(ids)
        self.size += len(ids) + 1

    def joined(self) -> bytes:
        """`b"5,6,7,8"`: the lists held, joined; forgets them."""
        text = b",".join(self.pieces)
        self.pieces, self.size = [], 0
        return text


def _take_line(line: bytes, offset: int, seen: set[str], text: _IdText, tally: LineTally) -> None:
    """A line the fast reading did not take: the full check, a glued record's repair."""
    response = parse_response_line(line)
    if response is not None:
        _keep_response(response, seen, text, tally)
        return
    glued = [parse_response_line(r.record) for r in read_line(line).responses]
    tally.skip(offset, functools.partial(why_not_response, line))  # corrupt, as everywhere
    if glued:
        tally.glued += 1  # but a torn record glued to a complete one: the complete one counts
    for record in glued:
        if record is not None:
            _keep_response(record, seen, text, tally)


def _keep_response(response: ResponseLine, seen: set[str], text: _IdText, tally: LineTally) -> None:
    _keep(response.id, response.ids_text(), seen, text, tally)


def _keep(
    response_id: str, ids: bytes | memoryview, seen: set[str], text: _IdText, tally: LineTally
) -> None:
    if response_id in seen:
        tally.duplicates += 1
        return
    seen.add(response_id)
    if ids:
        text.add(ids)


def _overlong(line: OverlongLine) -> str:
    return f"a line of {line.size_bytes:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"
