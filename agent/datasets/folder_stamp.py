"""Whether a dataset folder changed since its last read, from one stat per file it is read from.

With thousands of dataset folders most of them sit still; a scan that re-read and recomputed
each one took seconds (bench_daemon). A folder whose files, writers and jobs are as they were,
and whose figures can no longer move with time alone (nothing writes it, every rate is zero),
keeps its last result. Only stats here: no file is opened.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from agent.protocol import RATE_WINDOWS_S, DatasetProgress, JobInfo

HAS_EFFECTIVE_IDS = os.access in os.supports_effective_ids
"""access(2) checks as the effective user, as stat does (Linux: yes)."""
FileStamp = tuple[int, int, int]
"""(inode, size, mtime in ns) of a file; MISSING when it cannot be stat'ed."""
MISSING: FileStamp = (0, -1, 0)


@dataclass(frozen=True, slots=True)
class FolderStamp:
    """What a dataset's figures are read from, as of one scan."""

    files: tuple[FileStamp, ...]
    others: Hashable
    """Everything else its figures depend on: its writers and the jobs that name it."""


def file_stamps(
    paths: Iterable[str], before: tuple[FileStamp, ...] | None = None
) -> tuple[FileStamp, ...]:
    """The stamp of each path, in order; `before` is each one's stamp at the last look.

    A file missing then is first looked for with access(2): a stat that fails raises an
    exception that costs more than the stat, and a folder an old script writes has no
    errors.jsonl or runner.json at all.
    """
    if before is None:
        return tuple(_stamp(path) for path in paths)
    return tuple(_stamp_again(path, last) for path, last in zip(paths, before, strict=True))


def _stamp_again(path: str, last: FileStamp) -> FileStamp:
    if last == MISSING and not file_exists(path):
        return MISSING
    return _stamp(path)


def file_exists(path: str | os.PathLike[str]) -> bool:
    """Whether `path` exists (links followed), as the effective user sees it, as stat does.

    access(2) answers without an exception: `os.path.exists` raises and catches one for a
    missing file, which costs more than the look itself in a root of thousands of folders.
    """
    return os.access(path, os.F_OK, effective_ids=HAS_EFFECTIVE_IDS)


def _stamp(path: str) -> FileStamp:
    try:
        info = os.stat(path)
    except OSError:
        return MISSING
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def jobs_naming(name: str, jobs: tuple[JobInfo, ...]) -> tuple[tuple[str, str], ...]:
    """(id, state) of each job that writes dataset `name`: one that starts or ends is a change."""
    return tuple((job.id, job.state) for job in jobs if job.dataset == name)


def settled(progress: DatasetProgress) -> bool:
    """True when only a change of its files, writers or jobs can change `progress`.

    Nothing writes it and every window's rate is there and zero, so no rate, ETA or status moves
    with time alone (its last response is sent as a time, not an age).
    """
    return (
        progress.status != "error"
        and not progress.writer_active
        and progress.writer is None
        and all(rate == 0 for rate in progress.tokens_per_s_by_window)
        and len(progress.tokens_per_s_by_window) == len(RATE_WINDOWS_S)
    )
