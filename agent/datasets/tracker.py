"""Dataset progress read from the files on disk, followed incrementally by byte offset.

Works on the files any script writes: a response line needs only `id` and
`output_ids` (or `completion_tokens`). This module holds the root-level tracker: which folders are
datasets, when one is read again, and the alerts over all of them; one folder's counters live in
`dataset_follower`, `line_follower` and `response_counter`. It reads files and never writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from agent.bundle import AGENT_PACKAGE
from agent.datasets.code_digest import code_digest
from agent.datasets.dataset_follower import (
    DatasetFollower,
    file_alerts,
    run_view,
    skipped_alerts,
)
from agent.datasets.disk_space import DatasetDisk, low_disk_alerts, write_failed_alert
from agent.datasets.folder_stamp import FolderStamp, file_stamps, jobs_naming, settled
from agent.datasets.line_follower import FailedPromptIds, LineFollower, PromptCounter
from agent.datasets.progress import Liveness, dataset_alerts, dataset_progress, failed_progress
from agent.datasets.rates import KEEP_S, RateHistory
from agent.datasets.response_counter import ResponseCounter
from agent.datasets.root_listing import RootListing, list_datasets
from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.writers import DatasetFiles, Writer, run_with_writers, with_writers
from agent.host.clock import SYSTEM_CLOCK, Clock
from agent.host.regular_files import NotRegularFileError
from agent.protocol import Alert, DatasetProgress, DatasetsConfig, JobInfo

__all__ = ["DatasetTracker", "ResponseCounter"]

log = logging.getLogger(__name__)

EarlierPoints = Callable[[str, float], list[tuple[float, int, int]]]
"""(dataset, since wall time) -> its (wall time, tokens, responses) points, oldest first."""
SETTLED_MOVE_S = 1.0
"""A settled dataset's last-response time is sent again when it moved this much (the wall clock
stepped): the console shows it as the clock time the dataset ended, so it must stay exact."""

RUNNER_PACKAGE = AGENT_PACKAGE / "pipeline" / "inference"


class DatasetTracker:
    """Every dataset under a root, each followed by its own offsets and history across calls.

    An error in one dataset (a file that is a FIFO, a folder that became unreadable, a bug)
    marks that dataset `error` with an alert, keeps its last counts and leaves the others alone.
    """

    def __init__(
        self,
        config: DatasetsConfig,
        clock: Clock = SYSTEM_CLOCK,
        earlier: EarlierPoints | None = None,
        keeper: ScanKeeper | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self._earlier = earlier
        """A dataset's points from before this tracker (the agent's history): rates at once."""
        self._keeper = keeper
        """Where its followed files' scans are kept: a new tracker resumes them, not rescans."""
        self._followers: dict[str, DatasetFollower] = {}
        self._files: dict[str, DatasetFiles] = {}
        self._skipped: dict[str, str] = {}

    def signature(self) -> tuple[tuple[int, int], ...]:
        """(size, mtime in ns) of each followed responses file; cheap: one stat per dataset."""
        stamps = []
        for follower in self._followers.values():
            try:
                info = follower.responses.path.stat()
            except OSError:
                stamps.append((-1, 0))
                continue
            stamps.append((info.st_size, info.st_mtime_ns))
        return tuple(stamps)

    def names(self) -> list[str]:
        """The dataset folders under the root."""
        return self.listing().names

    def listing(self) -> RootListing:
        """The dataset folders under the root, and the entries skipped."""
        return list_datasets(self.config.root)

    def dataset_files(self, names: list[str] | None = None) -> list[DatasetFiles]:
        """The paths that say who writes each dataset (all, or `names`), for `WriterFinder`."""
        return [self._files_of(name) for name in (names or self.names())]

    def _files_of(self, name: str) -> DatasetFiles:
        found = self._files.get(name)
        if found is None:
            folder = Path(self.config.root) / name
            found = self._files[name] = DatasetFiles(
                name, folder, folder / self.config.responses_file
            )
        return found

    def progress(
        self, now: float | None = None, jobs: tuple[JobInfo, ...] = (),
        writers: Mapping[str, list[Writer]] | None = None, listing: RootListing | None = None,
    ) -> tuple[DatasetProgress, ...]:  # fmt: skip
        """The progress of every dataset folder under the root (as `listing` found it), by name."""
        listing = listing or list_datasets(self.config.root)
        self._skipped = listing.skipped
        self._followers = {name: self._follower(name) for name in listing.names}
        wall = self.clock.wall() if now is None else now
        monotonic = self.clock.monotonic()
        writers = writers or {}
        progress = tuple(
            self._current(follower, wall, monotonic, jobs, writers.get(follower.name, []))
            for follower in self._followers.values()
        )
        if self._keeper is not None:
            self._keeper.noticed(self._followed_files(), monotonic)
        return progress

    def keep_scans(self) -> None:
        """Hand every followed file's scan that moved since it was kept to the keeper (at stop).

        Call it from the thread that takes the snapshots, or while none is taken.
        """
        if self._keeper is not None:
            self._keeper.keep_all(self._followed_files(), self.clock.monotonic())

    def _followed_files(self) -> list[LineFollower]:
        return [file for follower in self._followers.values() for file in follower.files]

    def _current(
        self, follower: DatasetFollower, now: float, monotonic: float, jobs: tuple[JobInfo, ...],
        writers: list[Writer],
    ) -> DatasetProgress:  # fmt: skip
        """Its last result when nothing it depends on changed and time alone moves nothing."""
        files = file_stamps(
            follower.stamped_paths, None if follower.stamp is None else follower.stamp.files
        )
        stamp = FolderStamp(files, (tuple(writers), jobs_naming(follower.name, jobs)))
        last = follower.last
        if last is not None and stamp == follower.stamp and settled(last):
            follower.history.observe(monotonic, last.tokens, last.responses)
            _, size, mtime_ns = files[1]
            age = follower.idle_for_s_since(mtime_ns, now, monotonic) if size >= 0 else None
            at = None if age is None else now - age
            if _moved(last.last_response_at, at):
                follower.last = last = replace(last, last_response_at=at)
            return last
        progress = self._guarded(follower, now, monotonic, jobs, writers)
        follower.stamp, follower.last = stamp, progress
        return progress

    def _guarded(
        self, follower: DatasetFollower, now: float, monotonic: float, jobs: tuple[JobInfo, ...],
        writers: list[Writer],
    ) -> DatasetProgress:  # fmt: skip
        try:
            progress = self._one(follower, now, monotonic, jobs, writers)
        except OSError as exc:
            follower.error = str(exc) if isinstance(exc, NotRegularFileError) else _os_error(exc)
        except Exception as exc:  # a bug must cost one dataset its update, not the snapshot
            log.exception("reading dataset %s failed", follower.name)
            follower.error = (
                f"the agent failed reading it ({type(exc).__name__}: {exc}); see agent.log"
            )
        else:
            follower.error = None
            return progress
        return failed_progress(follower.name, follower.last_counts(), self._budget(follower.name))

    def _one(
        self, follower: DatasetFollower, now: float, monotonic: float, jobs: tuple[JobInfo, ...],
        writers: list[Writer],
    ) -> DatasetProgress:  # fmt: skip
        counts = follower.counts()
        follower.history.observe(monotonic, counts.tokens, counts.responses)
        run = follower.run = run_with_writers(run_view(follower, jobs, now, monotonic), writers)
        idle = follower.idle_for_s(now, monotonic)
        live = Liveness(
            (run is not None and run.active) or bool(writers), idle, self.config.stall_after_s,
            frozen=any(w.stopped for w in writers),
            last_response_at=None if idle is None else now - idle,
        )  # fmt: skip
        progress = dataset_progress(
            follower.name, counts, self._budget(follower.name), run, follower.history, live,
            self.config.overrun_alert_share,
        )  # fmt: skip
        progress = with_writers(progress, writers)
        if run is not None and run.active and run.runner_sha256:
            current = code_digest(str(RUNNER_PACKAGE))  # the runner code this agent would start now
            progress = replace(progress, stale_code=current not in (None, run.runner_sha256))
        return progress

    def _budget(self, name: str) -> int | None:
        return self.config.budgets.get(name, self.config.budget)

    def alerts(self, progress: tuple[DatasetProgress, ...], now: float) -> list[Alert]:
        """Budget, projection, stall, stale-code, truncation, file, skipped-entry and disk alerts."""
        alerts = [
            a
            for item in progress
            for a in dataset_alerts(
                item, self.config.overrun_alert_share, now, self.config.truncation_alert_share
            )
        ]
        alerts += self._disk_alerts(progress, now)
        for item in progress:
            follower = self._followers.get(item.name)
            if follower is not None:
                alerts += file_alerts(item.name, follower, self.config.responses_file, now)
        return alerts + skipped_alerts(self.config.root, self._skipped, now)

    def _disk_alerts(self, progress: tuple[DatasetProgress, ...], now: float) -> list[Alert]:
        followers = [(item, self._followers[item.name]) for item in progress]
        disks = [
            DatasetDisk(item, f.folder, f.responses.offset)
            for item, f in followers
            if item.writer_active  # one nobody writes needs no room
        ]
        failed = [write_failed_alert(item.name, f.run, now) for item, f in followers if f.run]
        return low_disk_alerts(disks, self.config.low_disk_floor_bytes, now) + [
            alert for alert in failed if alert is not None
        ]

    def _follower(self, name: str) -> DatasetFollower:
        existing = self._followers.get(name)
        if existing is not None:
            return existing
        folder = Path(self.config.root) / name
        follower = DatasetFollower(
            name,
            folder,
            PromptCounter(folder / self.config.prompts_file),
            ResponseCounter(folder / self.config.responses_file),
            FailedPromptIds(folder / "errors.jsonl"),
            self._seeded_history(name),
        )
        if self._keeper is not None:
            for file in follower.files:
                self._keeper.take_up(file)
        return follower

    def _seeded_history(self, name: str) -> RateHistory:
        if self._earlier is None:
            return RateHistory()
        wall = self.clock.wall()
        try:
            points = self._earlier(name, wall - KEEP_S)
        except Exception:  # a damaged history costs the early rates, never the dataset
            log.exception("reading the history of %s failed", name)
            return RateHistory()
        return RateHistory.seeded(points, wall, self.clock.monotonic())


def _moved(before: float | None, now: float | None) -> bool:
    """Whether a settled dataset's last-response time moved enough to be sent again."""
    if before is None or now is None:
        return before != now
    return abs(now - before) >= SETTLED_MOVE_S


def _os_error(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot read{where}: {exc.strerror or exc}"
