"""The runner's files: resume from `raw_responses.jsonl` by id, and append records durably.

Resume never counts lines: every complete valid line is a done id (the first one wins if an id
repeats). A torn last line, normal after a kill, is moved to `raw_responses.torn` and the file
is cut back to its last newline. An unparseable line in the middle stops the run with its byte
offset, unless `--repair` moves it to `raw_responses.corrupt` and keeps the rest.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.datasets.response_lines import parse_response


class CorruptRecordError(Exception):
    """A complete line in the middle of the responses file is not a response."""


@dataclass
class ResumeState:
    """What earlier runs left: the ids done and their tokens."""

    done_ids: set[str] = field(default_factory=set)
    tokens: int = 0
    lengths: list[int] = field(default_factory=list)
    """Completion tokens of each done response, for the budget gate's length statistics."""
    duplicates: int = 0
    torn_bytes_moved: int = 0
    corrupt_lines_moved: int = 0


def recover(path: Path, *, repair: bool) -> ResumeState:
    """Read what is done, cutting off a torn tail and, with `repair`, moving corrupt lines."""
    state = ResumeState()
    if not path.exists():
        return state
    corrupt: list[tuple[int, bytes]] = []
    end_of_valid = _scan(path, state, corrupt)
    size = path.stat().st_size
    if end_of_valid < size:
        state.torn_bytes_moved = _move_torn_tail(path, end_of_valid)
    if corrupt and not repair:
        offset, line = corrupt[0]
        raise CorruptRecordError(
            f"{path}: line at byte {offset} is not a response ({line[:60]!r}); "
            f"{len(corrupt)} such line(s). Inspect it, or rerun with --repair to move them "
            f"to {path.with_suffix('.corrupt')}"
        )
    if corrupt:
        _move_corrupt_lines(path, corrupt)
        state.corrupt_lines_moved = len(corrupt)
    return state


def _scan(path: Path, state: ResumeState, corrupt: list[tuple[int, bytes]]) -> int:
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            if line.strip():
                _take(line, offset, state, corrupt)
            offset += len(line)
    return offset


def _take(line: bytes, offset: int, state: ResumeState, corrupt: list[tuple[int, bytes]]) -> None:
    parsed = parse_response(line)
    if parsed is None:
        corrupt.append((offset, line))
        return
    response_id, tokens = parsed
    if response_id in state.done_ids:
        state.duplicates += 1
        return
    state.done_ids.add(response_id)
    state.tokens += tokens
    state.lengths.append(tokens)


def _move_torn_tail(path: Path, keep_bytes: int) -> int:
    with path.open("rb+") as handle:
        handle.seek(keep_bytes)
        tail = handle.read()
        with path.with_suffix(".torn").open("ab") as torn:
            torn.write(tail + b"\n")
            torn.flush()
            os.fsync(torn.fileno())
        handle.truncate(keep_bytes)
        handle.flush()
        os.fsync(handle.fileno())
    return len(tail)


def _move_corrupt_lines(path: Path, corrupt: list[tuple[int, bytes]]) -> None:
    bad_offsets = {offset for offset, _ in corrupt}
    with path.with_suffix(".corrupt").open("ab") as aside:
        aside.writelines(line for _, line in corrupt)
        aside.flush()
        os.fsync(aside.fileno())
    tmp = path.with_suffix(".repairing")
    with path.open("rb") as source, tmp.open("wb") as target:
        offset = 0
        for line in source:
            if offset not in bad_offsets:
                target.write(line)
            offset += len(line)
        target.flush()
        os.fsync(target.fileno())
    os.replace(tmp, path)


def permanently_failed_ids(path: Path) -> set[str]:
    """Ids that errors.jsonl marks as failing for good (retried only if the line is removed)."""
    failed: set[str] = set()
    if not path.exists():
        return failed
    with path.open("rb") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("permanent") and "id" in record:
                failed.add(str(record["id"]))
    return failed


class AppendLog:
    """An append-only JSONL file: one complete line per write, fsynced at least once a second."""

    def __init__(self, path: Path, fsync_interval_s: float = 1.0) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._fsync_interval_s = fsync_interval_s
        self._synced_at = time.monotonic()
        self._dirty = False

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line, in one write call."""
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        written = os.write(self._fd, data)
        while written < len(data):  # regular files write whole; this guards odd filesystems
            written += os.write(self._fd, data[written:])
        self._dirty = True
        if time.monotonic() - self._synced_at >= self._fsync_interval_s:
            self.sync()

    def sync(self) -> None:
        """Fsync what was appended since the last sync."""
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        self._synced_at = time.monotonic()

    def close(self) -> None:
        """Sync and close."""
        self.sync()
        os.close(self._fd)
