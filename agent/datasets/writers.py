"""Who writes each dataset now, whoever started it: the one-writer rule as the agent sees it.

A writer is any of: an inference job of the agent's own for that dataset, the process holding
the dataset's `writer.lock` (/proc/locks), or a process with its responses file open for writing
(an older script that takes no lock, found through /proc/*/fd). A writer stopped by SIGSTOP, or
hung, is still the writer: the dataset is stalled, not free. The lock is read every time (one
small file); the descriptor scan walks every process, so it is redone at most every
`FD_SCAN_INTERVAL_S`, or at once when a launch asks. This module only reads /proc; it never
signals or locks.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from agent.datasets.folder_stamp import file_exists
from agent.datasets.runner_status import RunView
from agent.datasets.writer_lock import (
    LOCK_NAME,
    FlockTable,
    LockHolder,
    flock_writers,
    lock_holder,
)
from agent.host.procfs import PROC, ProcessInfo, all_pids, command_line, process_info
from agent.protocol import LIVE_JOB_STATES, DatasetProgress, JobInfo

FD_SCAN_INTERVAL_S = 30.0
"""The descriptor scan walks every process; a launch always rescans first."""
STOPPED_STATES = ("T", "t")
"""/proc state letters of a process stopped by a signal (SIGSTOP, SIGTSTP) or by a tracer."""


@dataclass(frozen=True, slots=True)
class Writer:
    """One process writing a dataset, and how it was found."""

    pid: int
    argv: tuple[str, ...]
    how: str
    stopped: bool = False

    def describe(self) -> str:
        """`pid N (command line), how it was found[, stopped]`, for messages."""
        command = " ".join(self.argv) or "command line unreadable"
        frozen = ", stopped (SIGSTOP): it makes no progress until SIGCONT" if self.stopped else ""
        return f"pid {self.pid} ({command}), {self.how}{frozen}"


@dataclass(frozen=True)
class DatasetFiles:
    """The paths of one dataset that say who writes it (made once: looked at every snapshot)."""

    name: str
    folder: Path
    responses: Path

    @cached_property
    def lock(self) -> Path:
        """Its writer.lock."""
        return self.folder / LOCK_NAME

    @cached_property
    def responses_key(self) -> str:
        """The responses path as the descriptor scan keys it."""
        return str(self.responses)


class WriterFinder:
    """Finds the writers of datasets; keeps the last descriptor scan for a while."""

    def __init__(self, interval_s: float = FD_SCAN_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._scanned_at = float("-inf")
        self._open: dict[str, list[int]] = {}
        self._missing: set[str] = set()
        """Responses files that did not exist at the last descriptor scan."""
        self._lock = threading.Lock()

    def find(
        self, datasets: Iterable[DatasetFiles], jobs: tuple[JobInfo, ...], *, fresh: bool = False
    ) -> dict[str, list[Writer]]:
        """Name -> its writers (empty when nobody writes it). Blocking: call it off the loop."""
        datasets = list(datasets)
        open_for_writing = self._open_for_writing({d.responses_key for d in datasets}, fresh)
        locks = functools.cache(flock_writers)  # read only if some dataset has a lock file
        return {d.name: _writers_of(d, jobs, open_for_writing, locks) for d in datasets}

    def _open_for_writing(self, paths: set[str], fresh: bool) -> dict[str, list[int]]:
        with self._lock:
            now = time.monotonic()
            if fresh or now - self._scanned_at >= self.interval_s or self._new_files(paths):
                self._open = open_for_writing(paths)
                self._missing = {path for path in paths if not file_exists(path)}
                self._scanned_at = now
            return self._open

    def _new_files(self, paths: set[str]) -> bool:
        """A path not scanned yet, or a file that did not exist at the last scan: someone made it.

        Only the files missing then are looked at again, so a root of thousands costs nothing.
        """
        if not paths <= self._open.keys():
            return True
        return any(file_exists(path) for path in self._missing & paths)


def _writers_of(
    dataset: DatasetFiles, jobs: tuple[JobInfo, ...], open_for_writing: dict[str, list[int]],
    locks: Callable[[], FlockTable],
) -> list[Writer]:  # fmt: skip
    found: dict[int, Writer] = {}
    for job in jobs:
        pid = job.pid or job.pgid
        writes = job.kind == "inference" and job.dataset == dataset.name and not job.external
        if writes and job.state in LIVE_JOB_STATES and pid:
            found.setdefault(pid, _writer(pid, f"agent job {job.id}", job.argv))
    holder = _lock_holder(dataset.lock, locks)
    if holder is not None:
        found.setdefault(holder.pid, _writer(holder.pid, f"holds {LOCK_NAME}", holder.argv))
    for pid in open_for_writing.get(dataset.responses_key, []):
        if pid not in found and (writer := _live_writer(pid, dataset.responses.name)) is not None:
            found[pid] = writer
    return list(found.values())


def _lock_holder(path: Path, locks: Callable[[], FlockTable]) -> LockHolder | None:
    """Who holds `path`'s lock, reading /proc/locks (`locks`) only when the lock file exists."""
    if not file_exists(path):
        return None
    table = locks()
    return lock_holder(path, table) if table else None


def _writer(pid: int, how: str, argv: tuple[str, ...] = ()) -> Writer:
    return _described(pid, process_info(pid), how, argv)


def _live_writer(pid: int, file_name: str) -> Writer | None:
    """A pid the last descriptor scan saw writing `file_name`; None once it has ended since."""
    info = process_info(pid)
    return None if info is None else _described(pid, info, f"has {file_name} open for writing")


def _described(pid: int, info: ProcessInfo | None, how: str, argv: tuple[str, ...] = ()) -> Writer:
    """The Writer for `pid`, read from /proc once (`info`); its argv from /proc when not given."""
    stopped = info is not None and info.state in STOPPED_STATES
    return Writer(pid, argv or tuple(command_line(pid)), how, stopped)


def open_for_writing(paths: set[str]) -> dict[str, list[int]]:
    """Path -> pids holding it open for writing (O_WRONLY or O_RDWR), from /proc/*/fd.

    Plain strings and one readlink per descriptor: this walks every descriptor of every process.
    """
    wanted = {os.path.realpath(p): p for p in paths}
    found: dict[str, list[int]] = {p: [] for p in paths}
    own, proc = os.getpid(), str(PROC)
    for pid in all_pids():
        if pid == own:
            continue
        fd_dir = f"{proc}/{pid}/fd"
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to read
        for name in names:
            try:
                path = wanted.get(os.readlink(f"{fd_dir}/{name}"))
            except OSError:
                continue
            if path is not None and pid not in found[path] and _writable(pid, name):
                found[path].append(pid)
    return found


def _writable(pid: int, fd: str) -> bool:
    """True if descriptor `fd` of `pid` was opened for writing (fdinfo `flags`, octal)."""
    try:
        text = (PROC / str(pid) / "fdinfo" / fd).read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    return False


def run_with_writers(run: RunView | None, writers: list[Writer]) -> RunView | None:
    """The run a live writer stands for, even when its runner.json went stale (it is stopped).

    A runner.json whose pid is one of the writers still says that run's stop condition.
    """
    if run is None or run.active or run.pid is None:
        return run
    return replace(run, active=True) if any(w.pid == run.pid for w in writers) else run


def with_writers(progress: DatasetProgress, writers: list[Writer]) -> DatasetProgress:
    """`progress` naming its writer(s)."""
    if not writers:
        return progress
    first, others = writers[0], ", ".join(str(w.pid) for w in writers[1:])
    more = f" (and {len(writers) - 1} more writer(s): pid {others})" if others else ""
    return replace(
        progress, writer=first.describe() + more, writer_pid=first.pid,
        writer_stopped=any(w.stopped for w in writers),
    )  # fmt: skip


def second_writer_refusal(dataset: str, writers: list[Writer]) -> str:
    """Why a launch that would write `dataset` is refused, naming who writes it."""
    who = "; ".join(w.describe() for w in writers)
    return (
        f"{dataset} already has a writer: {who}. A second one would duplicate ids and spend the "
        "budget twice: stop it first (k), or wait for it to end"
    )
