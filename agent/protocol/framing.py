"""Splitting a byte stream into lines, with a bound on how long a line may grow."""

from __future__ import annotations

import typing
from dataclasses import dataclass

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longest line either side accepts; a longer one is discarded whole and answered with an error."""


class ByteReader(typing.Protocol):
    """The read half of a channel: asyncio's or asyncssh's stream reader."""

    async def read(self, n: int = -1) -> bytes: ...  # noqa: D102


class ByteWriter(typing.Protocol):
    """The write half of a channel: asyncio's or asyncssh's stream writer."""

    def write(self, data: bytes) -> None: ...  # noqa: D102

    async def drain(self) -> None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class OversizedLine:
    """Stands in for a line that was longer than the limit; its bytes were dropped."""

    size_bytes: int


class LineFramer:
    """Splits a byte stream into lines, dropping (and reporting) any line over `max_bytes`.

    Memory stays bounded by `max_bytes` however long a line grows, and the stream stays usable
    after an oversized line: framing resumes at the next newline.
    """

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._buffer = bytearray()
        self._dropped = 0
        """Bytes of the current oversized line dropped so far (0 while not dropping)."""

    def feed(self, chunk: bytes) -> list[bytes | OversizedLine]:
        """The complete lines (newline stripped) that `chunk` finishes, in order."""
        lines: list[bytes | OversizedLine] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            lines.append(self._finish(chunk[start:end]))
            start = end + 1
        self._keep(chunk[start:])
        return lines

    def _finish(self, tail: bytes) -> bytes | OversizedLine:
        size = self._dropped + len(self._buffer) + len(tail)
        line = bytes(self._buffer) + tail
        self._buffer.clear()
        self._dropped = 0
        return OversizedLine(size) if size > self._max_bytes else line

    def _keep(self, rest: bytes) -> None:
        if self._dropped or len(self._buffer) + len(rest) > self._max_bytes:
            self._dropped += len(self._buffer) + len(rest)
            self._buffer.clear()
        else:
            self._buffer += rest

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line held or dropped so far."""
        return self._dropped + len(self._buffer)
