"""Moving a torn last line aside, only once it is proven that nobody is still writing it.

The runner holds the dataset's writer lock, but an old script appending with no lock is not
stopped by it. To such a writer, the bytes past the last newline are the record it is in the
middle of, and whatever lies past the size the scan saw is records it appended since: a repair
that cut back to the scanned newline moved 24 MB of whole records to `raw_responses.torn` and
lost 9 acknowledged ones. So a repair moves only the bytes between the last newline and the
size it scanned, and only after proving the file still: no other process has it open for
writing (/proc), and it has not changed for a settle period (by its mtime, then a wait for the
rest). It checks the size once more just before it cuts, at the exact offset it verified; a
file that grew at any point is refused and nothing is moved. The runner's own appends come
later, through `AppendLog`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agent.host.file_writers import processes_writing

SETTLE_S = 1.0
"""How long the file must have held still before a torn tail is taken for a dead writer's."""
COPY_CHUNK_BYTES = 1024 * 1024


class ConcurrentWriterError(Exception):
    """Another process is writing the file a repair would cut; nothing was moved."""

    def __init__(self, path: Path, evidence: str) -> None:
        super().__init__(
            f"another process is writing to {path} ({evidence}); stop it first: a repair "
            "cuts only a tail nobody writes, and nothing was moved"
        )


def move_torn_tail(path: Path, keep_bytes: int, scanned_bytes: int, settle_s: float) -> int:
    """Move bytes [keep_bytes, scanned_bytes) to `.torn` and cut there; returns the count."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        prove_still(fd, path, scanned_bytes, settle_s)
        torn = path.with_suffix(".torn")
        torn_size = _copy_aside(fd, keep_bytes, scanned_bytes, torn)
        try:
            check_size(fd, path, scanned_bytes)
        except ConcurrentWriterError:
            if torn_size:  # the tail stays where it was: no copy left behind
                os.truncate(torn, torn_size)
            else:  # nor a file this repair made
                torn.unlink(missing_ok=True)
            raise
        os.ftruncate(fd, keep_bytes)
        os.fsync(fd)
    finally:
        os.close(fd)
    return scanned_bytes - keep_bytes


def prove_still(fd: int, path: Path, scanned_bytes: int, settle_s: float) -> None:
    """Raise ConcurrentWriterError unless `fd` is as scanned and no process changes it."""
    before = os.fstat(fd)
    check_size(fd, path, scanned_bytes)
    writers = processes_writing(path)
    if writers:
        pids = ", ".join(str(pid) for pid in writers)
        raise ConcurrentWriterError(path, f"pid {pids} has it open for writing")
    time.sleep(_left_to_settle(before.st_mtime_ns, settle_s))
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise ConcurrentWriterError(
            path, f"it went from {before.st_size:,} to {after.st_size:,} bytes in {settle_s:g} s"
        )


def _left_to_settle(mtime_ns: int, settle_s: float) -> float:
    """How much of the settle period is still to wait, from when the file last changed.

    None if that is longer ago (a restart after a kill); all of it if the mtime is ahead of our
    clock.
    """
    still_for_s = time.time() - mtime_ns / 1e9
    return settle_s if still_for_s < 0 else max(0.0, settle_s - still_for_s)


def check_size(fd: int, path: Path, expected: int) -> None:
    """Raise ConcurrentWriterError if the file is no longer the size that was checked."""
    size = os.fstat(fd).st_size
    if size != expected:
        raise ConcurrentWriterError(path, f"it went from {expected:,} to {size:,} bytes")


def _copy_aside(fd: int, start: int, end: int, torn: Path) -> int:
    """Append bytes [start, end) of `fd` and a newline to `torn`, durably; returns its old size."""
    torn_fd = os.open(
        torn, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644
    )
    try:
        torn_size = os.fstat(torn_fd).st_size
        position = start
        while position < end:
            chunk = os.pread(fd, min(COPY_CHUNK_BYTES, end - position), position)
            if not chunk:
                break
            os.write(torn_fd, chunk)
            position += len(chunk)
        os.write(torn_fd, b"\n")
        os.fsync(torn_fd)
    finally:
        os.close(torn_fd)
    return torn_size
