"""Reading the lines of files that anyone can write, a window at a time.

Lines are read in blocks of at most one window, so memory stays bounded whatever the file
holds; a line longer than the window is reported as an `OverlongLine` (its bytes are skipped,
never held) and reading goes on after it. The agent's tracker, the runner's resume and the vocab
job all read responses through here (files opened with `agent.host.regular_files.open_regular`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from agent.datasets.response_lines import MAX_LINE_BYTES

WINDOW_BYTES = MAX_LINE_BYTES + 1
"""A longest valid line and its newline."""
READ_BYTES = 64 * 1024
"""What one read asks for, so that its lines are parsed while they are still in the CPU's cache
(reading a whole window at a time made a cold scan ~40% slower). Each block is a new bytes
object: below the C library's 128 KiB mmap threshold it reuses freed memory, where 256 KiB
blocks made the heap shrink and grow again, a page fault every 16 KB (a cold scan ~20% slower).
A line longer than a read is looked for with reads four times as long, up to the window."""


@dataclass(frozen=True, slots=True)
class OverlongLine:
    """A complete line longer than the window: where it starts and its length (newline excluded)."""

    offset: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class LineBlock:
    """Complete lines (each ending in a newline) starting at byte `offset` of the file."""

    offset: int
    data: bytes

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(offset, line without its newline) of each line of the block."""
        position = self.offset
        for line in self.data.split(b"\n")[:-1]:
            yield position, line
            position += len(line) + 1


class LineBlocks:
    """The complete lines of an open file from `offset` up to `end`, a window at a time.

    Iterating yields LineBlocks and OverlongLines in file order and stops before a torn tail
    (bytes after the last newline). Afterwards `offset` is just past the last newline read, and
    `searched_to` is how far a torn tail longer than the window was searched for its newline: pass
    it back next time so a growing torn line is not searched again from its start.
    """

    def __init__(
        self, handle: BinaryIO, offset: int, end: int, searched_to: int = 0,
        window_bytes: int = WINDOW_BYTES, read_bytes: int = READ_BYTES,
    ) -> None:  # fmt: skip
        self.handle = handle
        self.offset = offset
        self.end = end
        self.searched_to = max(searched_to, offset)
        self.window_bytes = window_bytes
        self.read_bytes = read_bytes
        self._fd = _descriptor(handle)

    def __iter__(self) -> Iterator[LineBlock | OverlongLine]:
        held = bytearray(min(self.read_bytes, self.window_bytes))
        view = memoryview(held)  # one buffer for every read: a fresh one each time costs more
        while self.offset < self.end:
            size = self._read_into(view)
            last = held.rfind(b"\n", 0, size)
            if last >= 0:
                block = LineBlock(self.offset, bytes(view[: last + 1]))
                self.offset += last + 1
                yield block
                continue
            chunk = self._longer_read(bytes(view[:size]))
            last = chunk.rfind(b"\n")
            if last >= 0:
                block = LineBlock(self.offset, chunk[: last + 1])
                self.offset += last + 1
                yield block
                continue
            if len(chunk) < self.window_bytes:
                return  # a torn tail within one window: its line is not complete yet
            newline = self._newline_after(self.offset + len(chunk))
            if newline is None:
                return  # a torn tail longer than the window
            overlong = OverlongLine(self.offset, newline - self.offset)
            self.offset = newline + 1
            yield overlong

    def _longer_read(self, first: bytes) -> bytes:
        """The bytes from `offset`, read four times longer each time until a newline comes.

        `first` was read without one; the reads stop at `end` and at the window.
        """
        chunk, size = first, len(first)
        while b"\n" not in chunk and size < self.window_bytes and self.offset + size < self.end:
            chunk = self._read(min(size * 4, self.window_bytes))
            if len(chunk) <= size:
                break  # the file was cut meanwhile: its next read starts again
            size = len(chunk)
        return chunk

    def _read(self, most: int) -> bytes:
        """Up to `most` bytes from `offset`, never past `end`."""
        self.handle.seek(self.offset)
        return self.handle.read(min(most, self.end - self.offset))

    def _read_into(self, view: memoryview) -> int:
        """Bytes from `offset` into `view`, never past `end`: how many were read."""
        most = min(len(view), self.end - self.offset)
        if self._fd is not None:  # one system call, at the offset: no seek, no buffer between
            return os.preadv(self._fd, [view[:most]], self.offset)
        self.handle.seek(self.offset)
        readinto: Callable[[memoryview], int | None] | None = getattr(self.handle, "readinto", None)
        if readinto is None:
            data = self.handle.read(most)
            view[: len(data)] = data
            return len(data)
        return readinto(view[:most]) or 0

    def _newline_after(self, start: int) -> int | None:
        """The position of the first newline from `start` (or from what was searched before)."""
        position = max(start, self.searched_to)
        self.handle.seek(position)
        while position < self.end:
            chunk = self.handle.read(min(self.window_bytes, self.end - position))
            if not chunk:
                break
            found = chunk.find(b"\n")
            if found >= 0:
                return position + found
            position += len(chunk)
        self.searched_to = position
        return None


def _descriptor(handle: BinaryIO) -> int | None:
    """The handle's file descriptor, where it is a file of the system's (os.preadv reads it)."""
    try:
        return handle.fileno() if hasattr(os, "preadv") else None
    except (OSError, ValueError):  # io.UnsupportedOperation (BytesIO) is both
        return None


def lines_with_tail(handle: BinaryIO) -> Iterator[bytes | OverlongLine]:
    """Every line of a file people write (prompts), the last one even without its newline."""
    size = os.fstat(handle.fileno()).st_size
    blocks = LineBlocks(handle, 0, size)
    for item in blocks:
        if isinstance(item, OverlongLine):
            yield item
        else:
            yield from (line for _, line in item.lines())
    rest = size - blocks.offset
    if rest > MAX_LINE_BYTES:
        yield OverlongLine(blocks.offset, rest)
    elif rest:
        handle.seek(blocks.offset)
        yield handle.read(rest)
