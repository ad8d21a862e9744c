"""Followers of append-only JSONL files: each call consumes only the bytes appended since the last.

A replaced or cut file is read again from byte 0; a torn last line is not consumed until it is
complete. This module reads files and never writes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.host.regular_files import check_regular, open_regular


@dataclass
class LineFollower:
    """Follows one append-only JSONL file, consuming only the bytes appended since last time."""

    path: Path
    offset: int = 0
    """Bytes consumed: always just past a newline."""
    inode: int | None = None
    torn_tail_bytes: int = 0
    searched_to: int = 0
    """How far a torn tail longer than the read window was searched for its newline."""

    def update(self) -> None:
        """Consume complete lines appended since the last call; rescan a replaced or cut file.

        A path that is not a regular file (a FIFO, a device) raises NotRegularFileError unread.
        """
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._restart(None)
            return
        check_regular(self.path, info.st_mode)
        if info.st_ino != self.inode or info.st_size < self.offset:
            self._restart(info.st_ino)
        if info.st_size > self.offset:
            self._consume(info.st_size)
        self.torn_tail_bytes = info.st_size - self.offset

    def _restart(self, inode: int | None) -> None:
        self.inode = inode
        self.offset = self.searched_to = 0
        self.torn_tail_bytes = 0
        self.reset()

    def _consume(self, size: int) -> None:
        with open_regular(self.path) as handle:
            blocks = LineBlocks(handle, self.offset, size, self.searched_to)
            for item in blocks:
                if isinstance(item, OverlongLine):
                    self.take_overlong(item)
                    self.offset = item.offset + item.size_bytes + 1
                else:
                    self.take_lines(item.data, item.offset)
                    self.offset = item.offset + len(item.data)
            self.searched_to = blocks.searched_to

    def reset(self) -> None:
        """Forget everything counted; the file is read again from byte 0."""

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count a block of complete lines that starts at byte `block_offset` of the file."""

    def take_overlong(self, line: OverlongLine) -> None:
        """Count a complete line longer than the read window (its bytes were not read)."""


@dataclass
class PromptCounter(LineFollower):
    """Counts the non-blank lines of a prompts file."""

    prompts: int = 0

    def reset(self) -> None:
        """Forget the count."""
        self.prompts = 0

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count the non-blank lines of the block."""
        self.prompts += sum(1 for line in block.split(b"\n") if line.strip())

    def take_overlong(self, line: OverlongLine) -> None:
        """A prompt too long to read is still a prompt (the runner will refuse it by name)."""
        self.prompts += 1


@dataclass
class FailedPromptIds(LineFollower):
    """The ids an errors.jsonl marks as failing for good, as the runner reads them."""

    ids: set[str] = field(default_factory=set)

    def reset(self) -> None:
        """Forget every id."""
        self.ids = set()

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Note the id of each line with `"permanent": true`."""
        for line in block.split(b"\n"):
            record = json_object(line) if b'"permanent"' in line else None
            if record is not None and record.get("permanent") and "id" in record:
                self.ids.add(str(record["id"]))


def json_object(line: bytes) -> dict[str, object] | None:
    """The JSON object on `line`, or None where it holds no JSON or JSON of another kind."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
