"""The runner's files: resume from `raw_responses.jsonl` by id, and append records durably.

Resume never counts lines: every complete valid line is a done id (the first one wins if an id
repeats). A torn last line, normal after a kill, is moved to `raw_responses.torn` and the file
is cut back to its last newline. An unparseable line in the middle, or a torn record glued to a
complete one (`agent.datasets.glued_lines`), stops the run with its byte offset, unless `--repair`
moves the line to `raw_responses.corrupt` and keeps the rest, and every complete record in it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.datasets.glued_lines import LineRecords, read_line
from agent.pipeline.inference.storage import StorageError, cut_back


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
    corrupt: list[Corrupt] = []
    end_of_valid = _scan(path, state, corrupt)
    if corrupt and not repair:
        raise CorruptRecordError(_corrupt_message(path, corrupt))
    try:
        if end_of_valid < path.stat().st_size:
            state.torn_bytes_moved = _move_torn_tail(path, end_of_valid)
        if corrupt:
            _move_corrupt_lines(path, corrupt)
            state.corrupt_lines_moved = len(corrupt)
    except OSError as exc:
        where = Path(exc.filename) if exc.filename else path
        raise StorageError(where, exc, "resume stopped before changing the responses") from None
    return state


@dataclass(frozen=True, slots=True)
class Corrupt:
    """A complete line that is not one response: where it is, its bytes, what it holds."""

    offset: int
    line: bytes
    found: LineRecords


def _corrupt_message(path: Path, corrupt: list[Corrupt]) -> str:
    first = corrupt[0]
    if first.found.glued:
        ids = ", ".join(repr(r.id) for r in first.found.responses)
        what = (
            f"holds {first.found.fragment_bytes} bytes of a torn record glued to the complete "
            f"record(s) {ids}"
        )
    else:
        what = f"is not a response ({first.line[:60]!r})"
    return (
        f"{path}: line at byte {first.offset} {what}; {len(corrupt)} such line(s). Inspect it, or "
        f"rerun with --repair to move the line(s) to {path.with_suffix('.corrupt')} and keep "
        "every complete record in them"
    )


def _scan(path: Path, state: ResumeState, corrupt: list[Corrupt]) -> int:
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            if line.strip():
                _take(line, offset, state, corrupt)
            offset += len(line)
    return offset


def _take(line: bytes, offset: int, state: ResumeState, corrupt: list[Corrupt]) -> None:
    found = read_line(line)
    if not found.clean:
        corrupt.append(Corrupt(offset, line, found))
    for response in found.responses:
        if response.id in state.done_ids:
            state.duplicates += 1
            continue
        state.done_ids.add(response.id)
        state.tokens += response.tokens
        state.lengths.append(response.tokens)


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


def _move_corrupt_lines(path: Path, corrupt: list[Corrupt]) -> None:
    """Each corrupt line goes aside whole; the complete records in it stay, one per line."""
    by_offset = {item.offset: item for item in corrupt}
    with path.with_suffix(".corrupt").open("ab") as aside:
        aside.writelines(item.line for item in corrupt)
        aside.flush()
        os.fsync(aside.fileno())
    tmp = path.with_suffix(".repairing")
    with path.open("rb") as source, tmp.open("wb") as target:
        offset = 0
        for line in source:
            item = by_offset.get(offset)
            target.writelines(
                [line] if item is None else [r.record + b"\n" for r in item.found.responses]
            )
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
    """An append-only JSONL file: one complete line per write, fsynced at least once a second.

    A write or fsync that fails raises `StorageError` after cutting any partial line back to the
    end of the last record written whole, so the file never holds half a record of ours.
    """

    def __init__(
        self,
        path: Path,
        fsync_interval_s: float = 1.0,
        write: Callable[[int, bytes], int] = os.write,
    ) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self.end = os.fstat(self._fd).st_size
        except OSError as exc:
            raise StorageError(path, exc) from None
        """Just past the last line written whole (resume leaves the file ending in a newline)."""
        self._write = write
        self._fsync_interval_s = fsync_interval_s
        self._synced_at = time.monotonic()
        self._dirty = False

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line, in one write call (more only on odd filesystems)."""
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        try:
            written = self._write(self._fd, data)
            while written < len(data):
                written += self._write(self._fd, data[written:])
        except OSError as exc:
            raise StorageError(self.path, exc, cut_back(self._fd, self.path, self.end)) from None
        self.end += len(data)
        self._dirty = True
        if time.monotonic() - self._synced_at >= self._fsync_interval_s:
            self.sync()

    def sync(self) -> None:
        """Fsync what was appended since the last sync."""
        if self._dirty:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise StorageError(
                    self.path, exc, "fsync failed: the last second of records may not be durable"
                ) from None
            self._dirty = False
        self._synced_at = time.monotonic()

    def close(self) -> None:
        """Sync (when it still can) and close."""
        try:
            self.sync()
        finally:
            os.close(self._fd)
