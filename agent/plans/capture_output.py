"""What a hidden-states job has written so far, and how fast: measured, never read.

The output folder is walked (sizes from the directory entries; no file is opened), at most every
`WALK_GAP_SHARE` times the last walk took and never more often than `MIN_WALK_GAP_S`: a folder of
a few thousand samples is walked every couple of seconds, one of 300,000 every half minute. A
folder past `MAX_ENTRIES` is not counted at all (the plan says so) rather than walked for minutes.

The rate is the written bytes' growth over the last `RATE_WINDOW_S` of the running job; once the
job ends it is kept as the estimate for its next run (the time a plan shows before it starts).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import LIVE_JOB_STATES, JobInfo

MAX_ENTRIES = 2_000_000
"""Entries walked before the count is given up (about a second per 300,000 on a local disk)."""
MIN_WALK_GAP_S = 2.0
WALK_GAP_SHARE = 20.0
RATE_WINDOW_S = 300.0
MIN_RATE_SPAN_S = 4.0
"""The least time between two measures a rate is taken from."""
SAMPLE_SUFFIXES = (".ckpt", ".ckpt.gz", ".safetensors", ".pt")
"""Sample files as the trainers write them (docs/file-formats.md, "Hidden states")."""


@dataclass(frozen=True, slots=True)
class FolderUse:
    """One walk of the output folder."""

    sample_bytes: int
    sample_files: int
    all_bytes: int
    """Every file's size: what a quota on the folder counts."""
    at: float
    """The meter's clock (time.monotonic) when the walk began."""


def walk_folder(folder: Path, at: float, limit: int = MAX_ENTRIES) -> FolderUse | None:
    """The sizes under `folder` (symbolic links not followed), or None.

    None when it holds more than `limit` entries or does not exist; unreadable sub-folders
    count as empty.
    """
    sample_bytes = sample_files = all_bytes = seen = 0
    pending = [folder]
    if not folder.is_dir():
        return None
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        size = entry.stat(follow_symlinks=False).st_size
                        all_bytes += size
                        if entry.name.endswith(SAMPLE_SUFFIXES):
                            sample_bytes, sample_files = sample_bytes + size, sample_files + 1
        except OSError:
            continue
    return FolderUse(sample_bytes, sample_files, all_bytes, at)


@dataclass(frozen=True, slots=True)
class Progress:
    """The folder's use, and the rate the job writes at, as far as it is known."""

    use: FolderUse | None
    bytes_per_s: float | None
    current: bool
    """True when the rate was measured on the job running now."""


class CaptureMeter:
    """The output folder's use, walked when due, and the rate per job name across its runs."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[Path, FolderUse] = {}
        self._walk_cost_s: dict[Path, float] = {}
        self._history: dict[str, deque[FolderUse]] = {}
        self._running_id: dict[str, str] = {}
        self._kept_rate: dict[str, float] = {}

    def progress(self, job: str, running_id: str | None, folder: Path) -> Progress:
        """The folder's use now (or at its last walk), and the job's rate.

        `running_id` is the id of the job's run now under way, or None when none runs: then
        the rate last measured is kept as the estimate for the next.
        """
        use = self._use(folder)
        if running_id is None:
            self._end_run(job)
            return Progress(use, self._kept_rate.get(job), False)
        history = self._history.setdefault(job, deque())
        if self._running_id.get(job) != running_id:
            history.clear()
            self._running_id[job] = running_id
        if use is not None and (not history or history[-1].at != use.at):
            history.append(use)
        while len(history) > 2 and history[-1].at - history[0].at > RATE_WINDOW_S:
            history.popleft()
        rate = _rate(history)
        if rate is None:
            return Progress(use, self._kept_rate.get(job), False)
        self._kept_rate[job] = rate
        return Progress(use, rate, True)

    def _end_run(self, job: str) -> None:
        self._history.pop(job, None)
        self._running_id.pop(job, None)

    def _use(self, folder: Path) -> FolderUse | None:
        last = self._last.get(folder)
        gap = max(MIN_WALK_GAP_S, WALK_GAP_SHARE * self._walk_cost_s.get(folder, 0.0))
        started = self.clock()
        if last is not None and started - last.at < gap:
            return last
        use = walk_folder(folder, started)
        self._walk_cost_s[folder] = self.clock() - started
        if use is None:
            self._last.pop(folder, None)
        else:
            self._last[folder] = use
        return use


def _rate(history: deque[FolderUse]) -> float | None:
    """Bytes per second between the oldest and newest measure, once they are far enough apart."""
    if len(history) < 2:
        return None
    first, last = history[0], history[-1]
    span = last.at - first.at
    if span < MIN_RATE_SPAN_S:
        return None
    return max(0.0, (last.sample_bytes - first.sample_bytes) / span)


def running_id(jobs: tuple[JobInfo, ...], name: str) -> str | None:
    """The id of the agent's own run of job `name` now under way, or None."""
    return next(
        (j.id for j in jobs if j.name == name and not j.external and j.state in LIVE_JOB_STATES),
        None,
    )
