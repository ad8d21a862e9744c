"""One dataset folder followed across calls: its counters, rate history, stamps and alerts.

Holds what one folder's files said at the last look; the root-level `DatasetTracker` decides when
to look again. This module reads files and never writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from agent.datasets.folder_stamp import FolderStamp
from agent.datasets.line_follower import FailedPromptIds, LineFollower, PromptCounter
from agent.datasets.progress import Counts
from agent.datasets.rates import RateHistory
from agent.datasets.response_counter import ResponseCounter
from agent.datasets.runner_status import RunView, read_runner_status, view_from_argv
from agent.host.clock import StampAge
from agent.protocol import LIVE_JOB_STATES, Alert, DatasetProgress, JobInfo

RUNNER = "runner.json"


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

    @property
    def files(self) -> tuple[LineFollower, ...]:
        """Its followed files: prompts, responses, errors."""
        return (self.prompts, self.responses, self.errors)

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
            self.responses.truncated_responses, self.responses.turn_records,
            self.responses.conversations_done,
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


def file_alerts(
    name: str, follower: DatasetFollower, responses_file: str, now: float
) -> list[Alert]:
    """corrupt_file (how many, the first one's offset and fault), prompts_missing, dataset_error."""
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
    prompts = follower.prompts.path
    if follower.prompts.inode is None:  # its last read found no file: no stat of our own
        alerts.append(Alert(
            "prompts_missing", "warning",
            f"{name}: no {prompts.name} in {prompts.parent}: nothing to generate; put its prompts "
            "there, one JSON object a line (docs/file-formats.md)", name, now,
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


def run_view(
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
