"""The runner's files: resume from `raw_responses.jsonl` by id, and append records durably.

Resume never counts lines: every complete valid line is a done id (the first one wins if an id
repeats). A torn last line, normal after a kill, is moved to `raw_responses.torn` and the file
is cut back to its last newline, once it is proven that no other process is writing it
(`torn_tail`). A line in the middle that is not a response (by the one definition in
`agent.datasets.response_lines`, the agent's and vocab's too), or a torn record glued to a
complete one (`agent.datasets.glued_lines`), stops the run with its byte offset, unless
`--repair` moves the line to `raw_responses.corrupt` and keeps the rest, and every complete record
in it.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from agent.datasets.file_lines import LineBlock, LineBlocks, OverlongLine
from agent.datasets.glued_lines import LineRecords, read_line
from agent.datasets.response_lines import MAX_LINE_BYTES, parse_response, why_not_response
from agent.host.regular_files import NotRegularFileError, open_regular, open_regular_for_append
from agent.pipeline.inference.storage import StorageError, cut_back
from agent.pipeline.inference.torn_tail import SETTLE_S, check_size, move_torn_tail, prove_still

COPY_CHUNK_BYTES = 1024 * 1024


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


@dataclass
class CorruptLines:
    """The lines that are not responses: how many, and the first one's offset and fault."""

    count: int = 0
    first_offset: int = 0
    first_reason: str = ""

    def add(self, offset: int, reason: Callable[[], str]) -> None:
        """One more; the reason is worked out for the first only."""
        if not self.count:
            self.first_offset, self.first_reason = offset, reason()
        self.count += 1


def recover(path: Path, *, repair: bool, settle_s: float = SETTLE_S) -> ResumeState:
    """Read what is done, cutting off a torn tail and, with `repair`, moving corrupt lines.

    Memory stays bounded whatever the file holds: lines are read a window at a time, a line
    longer than the window is corrupt, and corrupt lines are counted, not kept (a repair reads
    the file again). A path that is not a regular file raises NotRegularFileError unread. No
    byte is moved unless the file held still for `settle_s` with no other process writing it
    (ConcurrentWriterError otherwise).
    """
    state = ResumeState()
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return state
    corrupt = CorruptLines()
    with handle:
        size = os.fstat(handle.fileno()).st_size
        end_of_valid = _scan(handle, size, state, corrupt)
    if corrupt.count and not repair:
        raise CorruptRecordError(
            f"{path}: line at byte {corrupt.first_offset} {corrupt.first_reason}; {corrupt.count} "
            f"such line(s). Inspect it, or rerun with --repair to move the line(s) to "
            f"{path.with_suffix('.corrupt')} and keep every complete record in them"
        )
    try:
        if end_of_valid < size:
            state.torn_bytes_moved = move_torn_tail(path, end_of_valid, size, settle_s)
            size = end_of_valid
        if corrupt.count:
            _move_corrupt_lines(path, size, settle_s)
            state.corrupt_lines_moved = corrupt.count
    except OSError as exc:
        where = Path(exc.filename) if exc.filename else path
        raise StorageError(where, exc, "resume stopped before changing the responses") from None
    return state


def _scan(handle: BinaryIO, size: int, state: ResumeState, corrupt: CorruptLines) -> int:
    """Count every response up to the last newline; returns where that is."""
    blocks = LineBlocks(handle, 0, size)
    for item in blocks:
        if isinstance(item, OverlongLine):
            corrupt.add(item.offset, functools.partial(_overlong, item))
            continue
        for offset, line in item.lines():
            if line.strip():
                _take(line, offset, state, corrupt)
    return blocks.offset


def _overlong(line: OverlongLine) -> str:
    return (
        f"is not a response (a line of {line.size_bytes:,} bytes, over the "
        f"{MAX_LINE_BYTES:,}-byte limit)"
    )


def _take(line: bytes, offset: int, state: ResumeState, corrupt: CorruptLines) -> None:
    """Count the response on the line; a line that is not one is corrupt, glued records counted."""
    parsed = parse_response(line)
    if parsed is not None:
        _count(state, *parsed)
        return
    found = read_line(line)
    corrupt.add(offset, functools.partial(_fault, line, found))
    for response in found.responses:
        _count(state, response.id, response.tokens)


def _fault(line: bytes, found: LineRecords) -> str:
    if found.glued:
        ids = ", ".join(repr(r.id) for r in found.responses)
        return (
            f"holds {found.fragment_bytes} bytes of a torn record glued to the complete "
            f"record(s) {ids}"
        )
    return f"is not a response ({why_not_response(line)}: {line[:60]!r})"


def _count(state: ResumeState, response_id: str, tokens: int) -> None:
    if response_id in state.done_ids:
        state.duplicates += 1
        return
    state.done_ids.add(response_id)
    state.tokens += tokens
    state.lengths.append(tokens)


def _move_corrupt_lines(path: Path, size: int, settle_s: float) -> None:
    """Each line that is not a response goes aside whole; complete records in it stay, one a line.

    The file is rewritten, so it must hold still first and still be `size` bytes at the swap:
    a record another process appended meanwhile would be left in the replaced file.
    """
    tmp = path.with_suffix(".repairing")
    with path.open("rb") as source, path.with_suffix(".corrupt").open("ab") as aside:
        prove_still(source.fileno(), path, size, settle_s)
        with tmp.open("wb") as target:
            for item in LineBlocks(source, 0, size):
                if isinstance(item, OverlongLine):
                    end = item.offset + item.size_bytes + 1
                    _copy_range(source, item.offset, end, aside)
                    continue
                for _, line in item.lines():
                    if not line.strip() or parse_response(line) is not None:
                        target.write(line + b"\n")
                        continue
                    aside.write(line + b"\n")
                    target.writelines(r.record + b"\n" for r in read_line(line).responses)
            target.flush()
            os.fsync(target.fileno())
        aside.flush()
        os.fsync(aside.fileno())
        check_size(source.fileno(), path, size)
    os.replace(tmp, path)


def _copy_range(source: BinaryIO, start: int, end: int, target: BinaryIO) -> int:
    """Copy bytes [start, end) of `source` to `target` a chunk at a time; returns the count."""
    source.seek(start)
    position = start
    while position < end:
        chunk = source.read(min(COPY_CHUNK_BYTES, end - position))
        if not chunk:
            break
        target.write(chunk)
        position += len(chunk)
    return position - start


def permanently_failed_ids(path: Path) -> set[str]:
    """Ids that errors.jsonl marks as failing for good (retried only if the line is removed)."""
    failed: set[str] = set()
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return failed
    with handle:
        blocks = LineBlocks(handle, 0, os.fstat(handle.fileno()).st_size)
        for item in blocks:
            for _, line in item.lines() if isinstance(item, LineBlock) else ():
                record = _json_or_none(line)
                if isinstance(record, dict) and record.get("permanent") and "id" in record:
                    failed.add(str(record["id"]))
    return failed


def _json_or_none(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


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
            self._fd = open_regular_for_append(path)
            self.end = os.fstat(self._fd).st_size
        except NotRegularFileError:
            raise
        except OSError as exc:
            raise StorageError(path, exc) from None
        """Just past the last line written whole (resume leaves the file ending in a newline)."""
        self._write = write
        self._fsync_interval_s = fsync_interval_s
        self._synced_at = time.monotonic()
        self._dirty = False

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line of strict JSON (a NaN raises ValueError, nothing written)."""
        self.append_line(
            (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        )

    def append_line(self, data: bytes) -> None:
        """Write one encoded line, in one write call (more only on odd filesystems)."""
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
