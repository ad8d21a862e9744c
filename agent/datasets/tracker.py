"""Dataset progress read from the files on disk, followed incrementally by byte offset.

Works on the files any script writes (DESIGN §3): a response line needs only `id` and
`output_ids` (or `completion_tokens`). A torn last line is normal after a kill and is not counted
until it is complete; an unparseable complete line is corruption and is reported, never skipped
silently. This module reads files and never writes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from agent.bundle import AGENT_PACKAGE
from agent.datasets.code_digest import code_digest
from agent.datasets.disk_space import DatasetDisk, low_disk_alerts, write_failed_alert
from agent.datasets.file_lines import LineBlock, LineBlocks, OverlongLine
from agent.datasets.folder_stamp import FolderStamp, file_stamps, jobs_naming, settled
from agent.datasets.glued_lines import read_line
from agent.datasets.progress import (
    Counts,
    Liveness,
    dataset_alerts,
    dataset_progress,
    failed_progress,
)
from agent.datasets.rates import KEEP_S, RateHistory
from agent.datasets.response_lines import MAX_LINE_BYTES, parse_response, why_not_response
from agent.datasets.root_listing import RootListing, list_datasets
from agent.datasets.runner_status import RunView, read_runner_status, view_from_argv
from agent.datasets.writers import DatasetFiles, Writer, run_with_writers, with_writers
from agent.host.clock import SYSTEM_CLOCK, Clock, StampAge
from agent.host.regular_files import NotRegularFileError, check_regular, open_regular
from agent.protocol import LIVE_JOB_STATES, Alert, DatasetProgress, DatasetsConfig, JobInfo

log = logging.getLogger(__name__)

EarlierPoints = Callable[[str, float], list[tuple[float, int, int]]]
"""(dataset, since wall time) -> its (wall time, tokens, responses) points, oldest first."""
MAX_CORRUPT_OFFSETS = 100
"""Offsets of corrupt lines kept per file; beyond that they are only counted (bounded memory)."""
RUNNER = "runner.json"
SETTLED_MOVE_S = 1.0
"""A settled dataset's last-response time is sent again when it moved this much (the wall clock
stepped): the console shows it as the clock time the dataset ended, so it must stay exact."""


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
class ResponseCounter(LineFollower):
    """Counts the responses and completion tokens of a `raw_responses.jsonl`, each id once."""

    responses: int = 0
    tokens: int = 0
    corrupt_lines: int = 0
    corrupt_offsets: list[int] = field(default_factory=list)
    """The first MAX_CORRUPT_OFFSETS of them."""
    first_corrupt_reason: str = ""
    seen_ids: set[str] = field(default_factory=set)

    def reset(self) -> None:
        """Forget every response counted."""
        self.responses = self.tokens = self.corrupt_lines = 0
        self.corrupt_offsets = []
        self.first_corrupt_reason = ""
        self.seen_ids = set()

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count each response line of the block; note the byte offset of each corrupt one."""
        for offset, line in LineBlock(block_offset, block).lines():
            if line.strip():
                self._take_line(line, offset)

    def take_overlong(self, line: OverlongLine) -> None:
        """A line longer than the read window is corrupt, whatever it holds."""
        self._corrupt(line.offset, lambda: f"a line of {line.size_bytes:,} bytes, longer than "
                      f"the {MAX_LINE_BYTES:,}-byte limit")  # fmt: skip

    def _take_line(self, line: bytes, offset: int) -> None:
        record = parse_response(line)
        if record is not None:
            self._count(*record)
            return
        found = read_line(line)  # a torn record glued to a complete one: count the complete one
        if found.responses:
            self._corrupt(offset, lambda: "a torn record glued to a complete one, which is counted")
        else:
            self._corrupt(offset, lambda: why_not_response(line))
        for response in found.responses:
            self._count(response.id, response.tokens)

    def _count(self, response_id: str, tokens: int) -> None:
        if response_id in self.seen_ids:
            return
        self.seen_ids.add(response_id)
        self.responses += 1
        self.tokens += tokens

    def _corrupt(self, offset: int, reason: Callable[[], str]) -> None:
        if not self.corrupt_lines:
            self.first_corrupt_reason = reason()
        self.corrupt_lines += 1
        if len(self.corrupt_offsets) < MAX_CORRUPT_OFFSETS:
            self.corrupt_offsets.append(offset)


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
            record = _json_object(line) if b'"permanent"' in line else None
            if record is not None and record.get("permanent") and "id" in record:
                self.ids.add(str(record["id"]))


def _json_object(line: bytes) -> dict[str, object] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


@dataclass
class DatasetFollower:
    """The prompts and responses of one dataset folder, its rate history and its stamps' ages."""

    name: str
    folder: Path
    prompts: PromptCounter
    responses: ResponseCounter
    errors: FailedPromptIds
    history: RateHistory = field(default_factory=RateHistory)
    run: RunView | None = None
    """What runner.json said at the last look."""
    responses_age: StampAge = field(default_factory=StampAge)
    runner_age: StampAge = field(default_factory=StampAge)
    error: str | None = None
    """Why the last read failed (the counts are then from the read before)."""
    stamp: FolderStamp | None = None
    """What its last result was read from; an unchanged, settled folder is not read again."""
    last: DatasetProgress | None = None
    """Its last result."""

    @cached_property
    def stamped_paths(self) -> tuple[str, ...]:
        """The files its figures are read from: prompts, responses, errors, runner.json."""
        paths = (self.prompts.path, self.responses.path, self.errors.path, self.folder / RUNNER)
        return tuple(str(path) for path in paths)

    def counts(self) -> Counts:
        """Read what was appended since last time; returns the totals."""
        self.prompts.update()
        self.responses.update()
        self.errors.update()
        return self.last_counts()

    def last_counts(self) -> Counts:
        """The totals as last read, without reading."""
        return Counts(
            self.prompts.prompts, self.responses.responses, self.responses.tokens,
            self.responses.corrupt_lines, self.responses.torn_tail_bytes,
            len(self.errors.ids - self.responses.seen_ids),
        )  # fmt: skip

    def idle_for_s(self, now: float, monotonic_now: float) -> float | None:
        """Seconds since the responses file last changed (its mtime survives daemon restarts)."""
        try:
            mtime_ns = self.responses.path.stat().st_mtime_ns
        except OSError:
            return None
        return self.idle_for_s_since(mtime_ns, now, monotonic_now)

    def idle_for_s_since(self, mtime_ns: int, now: float, monotonic_now: float) -> float:
        """Seconds since the responses file was changed at `mtime_ns` (from a stat)."""
        return self.responses_age.age_s(mtime_ns / 1e9, now, monotonic_now)


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
    ) -> None:
        self.config = config
        self.clock = clock
        self._earlier = earlier
        """A dataset's points from before this tracker (the agent's history): rates at once."""
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
        return tuple(
            self._current(follower, wall, monotonic, jobs, writers.get(follower.name, []))
            for follower in self._followers.values()
        )

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
        run = follower.run = run_with_writers(_run_view(follower, jobs, now, monotonic), writers)
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
        """Budget, projection, stall, stale-code, corruption, error, skipped-entry and disk alerts."""
        alerts = [
            a
            for item in progress
            for a in dataset_alerts(item, self.config.overrun_alert_share, now)
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
        return DatasetFollower(
            name,
            folder,
            PromptCounter(folder / self.config.prompts_file),
            ResponseCounter(folder / self.config.responses_file),
            FailedPromptIds(folder / "errors.jsonl"),
            self._seeded_history(name),
        )

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


def file_alerts(
    name: str, follower: DatasetFollower, responses_file: str, now: float
) -> list[Alert]:
    """corrupt_file (how many, the first one's offset and fault) and dataset_error alerts."""
    alerts = []
    counter = follower.responses
    if counter.corrupt_lines:
        alerts.append(Alert(
            "corrupt_file", "error",
            f"{name}/{responses_file}: {counter.corrupt_lines:,} corrupt line(s), first at byte "
            f"{counter.corrupt_offsets[0]:,} ({counter.first_corrupt_reason}); they are not "
            "counted. The runner's --repair moves them to raw_responses.corrupt",
            name, now,
        ))  # fmt: skip
    if follower.error is not None:
        alerts.append(Alert(
            "dataset_error", "error",
            f"{name}: {follower.error}; its figures are from the last good read", name, now,
        ))  # fmt: skip
    return alerts


def skipped_alerts(root: str, skipped: dict[str, str], now: float) -> list[Alert]:
    """One dataset_skipped warning per entry under the root that cannot be used."""
    return [
        Alert("dataset_skipped", "warning", f"{root}/{name} {why}; skipped", name, now)
        for name, why in skipped.items()
    ]


def _os_error(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot read{where}: {exc.strerror or exc}"


def _run_view(
    follower: DatasetFollower, jobs: tuple[JobInfo, ...], now: float, monotonic: float
) -> RunView | None:
    """runner.json when a run keeps it fresh, else an agent job writing this dataset."""
    view = read_runner_status(
        follower.folder, now, lambda stamp: follower.runner_age.age_s(stamp, now, monotonic)
    )
    if view is not None and view.active:
        return view
    for job in jobs:
        if job.dataset == follower.name and job.state in LIVE_JOB_STATES:
            return replace(view_from_argv(job.argv), api_usage=view.api_usage if view else None)
    return view
