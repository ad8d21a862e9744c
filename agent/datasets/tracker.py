"""Dataset progress read from the files on disk, followed incrementally by byte offset.

Works on the files any script writes (DESIGN §3): a response line needs only `id` and
`output_ids` (or `completion_tokens`). A torn last line is normal after a kill and is not counted
until it is complete; an unparseable complete line is corruption and is reported, never skipped
silently. This module reads files and never writes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent.bundle import AGENT_PACKAGE
from agent.datasets.code_digest import code_digest
from agent.datasets.disk_space import DatasetDisk, low_disk_alerts, write_failed_alert
from agent.datasets.glued_lines import read_clean, read_line
from agent.datasets.progress import Counts, Liveness, dataset_alerts, dataset_progress
from agent.datasets.rates import RateHistory
from agent.datasets.runner_status import RunView, read_runner_status, view_from_argv
from agent.datasets.writers import DatasetFiles, Writer, run_with_writers, with_writers
from agent.protocol import Alert, DatasetProgress, DatasetsConfig, JobInfo

READ_CHUNK_BYTES = 16 * 1024 * 1024


@dataclass
class LineFollower:
    """Follows one append-only JSONL file, consuming only the bytes appended since last time."""

    path: Path
    offset: int = 0
    """Bytes consumed: always just past a newline."""
    inode: int | None = None
    torn_tail_bytes: int = 0

    def update(self) -> None:
        """Consume complete lines appended since the last call; rescan a replaced or cut file."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._restart(None)
            return
        if info.st_ino != self.inode or info.st_size < self.offset:
            self._restart(info.st_ino)
        if info.st_size > self.offset:
            self._consume(info.st_size)
        self.torn_tail_bytes = info.st_size - self.offset

    def _restart(self, inode: int | None) -> None:
        self.inode = inode
        self.offset = 0
        self.torn_tail_bytes = 0
        self.reset()

    def _consume(self, size: int) -> None:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            while self.offset < size:
                chunk = handle.read(min(READ_CHUNK_BYTES, size - self.offset))
                end = chunk.rfind(b"\n")
                if end < 0:
                    return
                self.take_lines(chunk[: end + 1], self.offset)
                self.offset += end + 1
                handle.seek(self.offset)

    def reset(self) -> None:
        """Forget everything counted; the file is read again from byte 0."""

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count a block of complete lines that starts at byte `block_offset` of the file."""


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


@dataclass
class ResponseCounter(LineFollower):
    """Counts the responses and completion tokens of a `raw_responses.jsonl`, each id once."""

    responses: int = 0
    tokens: int = 0
    corrupt_offsets: list[int] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)

    def reset(self) -> None:
        """Forget every response counted."""
        self.responses = self.tokens = 0
        self.corrupt_offsets = []
        self.seen_ids = set()

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count each response line of the block; note the byte offset of each corrupt one."""
        position = block_offset
        for line in block.split(b"\n")[:-1]:
            if line.strip():
                self._take_line(line, position)
            position += len(line) + 1

    def _take_line(self, line: bytes, offset: int) -> None:
        clean = read_clean(line)
        if clean is not None:
            self._count(*clean)
            return
        found = read_line(line)
        if not found.clean:  # unparseable, or a torn record glued to a complete one
            self.corrupt_offsets.append(offset)
        for response in found.responses:
            self._count(response.id, response.tokens)

    def _count(self, response_id: str, tokens: int) -> None:
        if response_id in self.seen_ids:
            return
        self.seen_ids.add(response_id)
        self.responses += 1
        self.tokens += tokens


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
    """The prompts and responses of one dataset folder, and its rate history."""

    name: str
    folder: Path
    prompts: PromptCounter
    responses: ResponseCounter
    errors: FailedPromptIds
    history: RateHistory = field(default_factory=RateHistory)
    run: RunView | None = None
    """What runner.json said at the last look."""

    def counts(self) -> Counts:
        """Read what was appended since last time; returns the totals."""
        self.prompts.update()
        self.responses.update()
        self.errors.update()
        return Counts(
            self.prompts.prompts, self.responses.responses, self.responses.tokens,
            len(self.responses.corrupt_offsets), self.responses.torn_tail_bytes,
            len(self.errors.ids - self.responses.seen_ids),
        )  # fmt: skip

    def idle_for_s(self, now: float) -> float | None:
        """Seconds since the responses file last grew (its mtime survives daemon restarts)."""
        try:
            return max(0.0, now - self.responses.path.stat().st_mtime)
        except FileNotFoundError:
            return None


RUNNER_PACKAGE = AGENT_PACKAGE / "pipeline" / "inference"


class DatasetsRootError(Exception):
    """The datasets root cannot be listed."""


class DatasetTracker:
    """Every dataset under a root, each followed by its own offsets and history across calls."""

    def __init__(self, config: DatasetsConfig) -> None:
        self.config = config
        self._followers: dict[str, DatasetFollower] = {}
        self._files: dict[str, DatasetFiles] = {}

    def signature(self) -> tuple[tuple[int, int], ...]:
        """(size, mtime in ns) of each followed responses file; cheap: one stat per dataset."""
        stamps = []
        for follower in self._followers.values():
            try:
                info = follower.responses.path.stat()
            except FileNotFoundError:
                stamps.append((-1, 0))
                continue
            stamps.append((info.st_size, info.st_mtime_ns))
        return tuple(stamps)

    def names(self) -> list[str]:
        """The dataset folders under the root."""
        return self._dataset_names()

    def dataset_files(self, names: list[str] | None = None) -> list[DatasetFiles]:
        """The paths that say who writes each dataset (all, or `names`), for `WriterFinder`."""
        return [self._files_of(name) for name in (names or self._dataset_names())]

    def _files_of(self, name: str) -> DatasetFiles:
        found = self._files.get(name)
        if found is None:
            folder = Path(self.config.root) / name
            found = self._files[name] = DatasetFiles(
                name, folder, folder / self.config.responses_file
            )
        return found

    def progress(
        self, now: float, jobs: tuple[JobInfo, ...] = (),
        writers: Mapping[str, list[Writer]] | None = None,
    ) -> tuple[DatasetProgress, ...]:  # fmt: skip
        """The progress of every dataset folder under the root, by name."""
        names = self._dataset_names()
        self._followers = {name: self._follower(name) for name in names}
        writers = writers or {}
        return tuple(
            self._one(follower, now, jobs, writers.get(follower.name, []))
            for follower in self._followers.values()
        )

    def _one(
        self, follower: DatasetFollower, now: float, jobs: tuple[JobInfo, ...],
        writers: list[Writer],
    ) -> DatasetProgress:  # fmt: skip
        counts = follower.counts()
        follower.history.observe(now, counts.tokens, counts.responses)
        run = follower.run = run_with_writers(_run_view(follower, jobs, now), writers)
        live = Liveness(
            (run is not None and run.active) or bool(writers), follower.idle_for_s(now),
            self.config.stall_after_s, frozen=any(w.stopped for w in writers),
        )  # fmt: skip
        budget = self.config.budgets.get(follower.name, self.config.budget)
        progress = dataset_progress(
            follower.name,
            counts,
            budget,
            run,
            follower.history,
            live,
            self.config.overrun_alert_share,
        )
        progress = with_writers(progress, writers)
        if run is not None and run.active and run.runner_sha256:
            current = code_digest(str(RUNNER_PACKAGE))  # the runner code this agent would start now
            progress = replace(progress, stale_code=current not in (None, run.runner_sha256))
        return progress

    def alerts(self, progress: tuple[DatasetProgress, ...], now: float) -> list[Alert]:
        """Budget, projection, stall, stale-code, corruption and disk alerts for `progress`."""
        alerts = [
            a
            for item in progress
            for a in dataset_alerts(item, self.config.overrun_alert_share, now)
        ]
        alerts += self._disk_alerts(progress, now)
        return alerts + [
            Alert(
                kind="corrupt_file",
                severity="error",
                subject=item.name,
                message=f"{item.name}/{self.config.responses_file}: {item.corrupt_lines} "
                f"unparseable line(s) (or torn records glued to a complete one, which is "
                f"counted), first at byte {self._followers[item.name].responses.corrupt_offsets[0]}",
                raised_at=now,
            )
            for item in progress
            if item.corrupt_lines
        ]

    def _disk_alerts(self, progress: tuple[DatasetProgress, ...], now: float) -> list[Alert]:
        followers = [(item, self._followers[item.name]) for item in progress]
        disks = [DatasetDisk(item, f.folder, f.responses.offset) for item, f in followers]
        failed = [write_failed_alert(item.name, f.run, now) for item, f in followers]
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
        )

    def _dataset_names(self) -> list[str]:
        root = self.config.root
        try:
            entries = list(os.scandir(root))
        except FileNotFoundError:
            raise DatasetsRootError(f"datasets root {root} does not exist") from None
        except NotADirectoryError:
            raise DatasetsRootError(f"datasets root {root} is not a directory") from None
        except OSError as exc:
            raise DatasetsRootError(
                f"datasets root {root} is not readable: {exc.strerror}"
            ) from None
        return sorted(
            entry.name for entry in entries if entry.is_dir() and not entry.name.startswith(".")
        )


def _run_view(follower: DatasetFollower, jobs: tuple[JobInfo, ...], now: float) -> RunView | None:
    """runner.json when a run keeps it fresh, else an agent job writing this dataset."""
    view = read_runner_status(follower.folder, now)
    if view is not None and view.active:
        return view
    for job in jobs:
        if job.dataset == follower.name and job.state in ("starting", "running", "stopping"):
            return view_from_argv(job.argv)
    return view
