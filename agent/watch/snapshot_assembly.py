"""Snapshot assembly: everything the dashboard shows, put together from the agent's observers.

The datasets scan and the /proc walks run in a thread; this module decides what is in a
snapshot, never what a request may do (that is `agent.serving`'s).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from agent.datasets.root_listing import DatasetsRootError
from agent.datasets.tracker import DatasetTracker
from agent.datasets.writers import WriterFinder
from agent.host.procfs import process_info
from agent.host.wall_clock import WallClockWatch
from agent.jobs.orphans import orphan_alerts
from agent.jobs.supervisor import stale_script
from agent.plans.capture_output import CaptureMeter, Progress, running_id
from agent.plans.hidden_states import hidden_states_plan, plan_alerts
from agent.probes.cache import REFRESH_S, ProbeCache
from agent.probes.gpus import GpuReading
from agent.probes.pipeline_reports import PipelineReports
from agent.probes.training.alerts import training_alerts
from agent.probes.training.watch import TrainingWatch
from agent.protocol import (
    Alert,
    DatasetProgress,
    DrafterEvaluation,
    ExportSummary,
    GpuSample,
    HiddenStatesPlan,
    JobInfo,
    PipelineConfig,
    Snapshot,
    TrainingProgress,
)
from agent.state.health import StateHealth
from agent.watch.isolated_readers import IsolatedReaders
from agent.watch.long_lived import LongLived

RECENT_EXIT_S = 600.0
"""Jobs that ended this recently are announced as job_exited."""

Reports = tuple[ExportSummary | None, DrafterEvaluation | None]
NO_REPORTS: Reports = (None, None)
NO_ALERTS: tuple[Alert, ...] = ()


@dataclass(frozen=True, slots=True)
class JobReadings:
    """The parts of a snapshot read from job logs, report files, scripts and /proc."""

    gpus: tuple[GpuSample, ...]
    training: tuple[TrainingProgress, ...]
    export: ExportSummary | None
    evaluation: DrafterEvaluation | None
    job_alerts: list[Alert]
    hidden_states_plan: HiddenStatesPlan | None = None


class SnapshotAssembly:
    """The observers a snapshot is made of, and the one snapshot in progress callers share."""

    def __init__(
        self, probes: ProbeCache, writers: WriterFinder, state_health: StateHealth,
        jobs_folder: Path = Path("."),
    ) -> None:  # fmt: skip
        self.jobs_folder = jobs_folder
        """Where a job with no cwd runs: a hidden-states job's relative output is there."""
        self.probes = probes
        self.writers = writers
        self.state_health = state_health
        self.training = TrainingWatch()
        self.reports = PipelineReports()
        self.wall_clock = WallClockWatch()
        self.long_lived = LongLived()
        self.capture_meter = CaptureMeter()
        """What the hidden-states job has written, and how fast, across snapshots."""
        self.readers = IsolatedReaders()
        """Every part but the datasets scan is read through one, alone in its failures."""
        self._taking: asyncio.Future[Snapshot] | None = None
        self._taking_for: DatasetTracker | None = None
        self._reading = threading.Lock()
        """One thread at a time reads through the trackers and readers, which keep offsets."""

    async def take(
        self, finish: Finish, tracker: DatasetTracker | None, pipeline: PipelineConfig,
        probe_every_s: float = REFRESH_S,
    ) -> Snapshot:  # fmt: skip
        """Everything the dashboard shows, now, for this host's pipeline.

        All of it is read and put together in one worker thread (5,000 dataset folders held
        the loop for most of a second otherwise), then `finish` (also in that thread) adds the
        daemon's own alerts. Callers that arrive while a snapshot is taken share it (snapshots
        for several consoles cost one scan); one that goes away does not cancel it for the others.
        """
        self.probes.refresh_if_stale(pipeline, probe_every_s)
        taking = self._taking
        if taking is None or taking.done() or self._taking_for is not tracker:
            taking = asyncio.ensure_future(asyncio.to_thread(self._take, finish, tracker, pipeline))
            self._taking, self._taking_for = taking, tracker
        return await asyncio.shield(taking)

    def while_not_reading(self, work: Callable[[], None], timeout_s: float) -> bool:
        """Run `work` while no snapshot reads through the trackers; False if none ended in time."""
        if not self._reading.acquire(timeout=timeout_s):
            return False
        try:
            work()
        finally:
            self._reading.release()
        return True

    def _take(
        self, finish: Finish, tracker: DatasetTracker | None, pipeline: PipelineConfig
    ) -> Snapshot:
        """The datasets scan, then every other part through its own isolated reader."""
        with self._reading:
            # The snapshot's time, read once: its datasets' last responses are dated against it,
            # so neither a slow scan nor a clock step after it ages them into a false stall.
            now = tracker.clock.wall() if tracker is not None else time.time()
            probes = self.probes.reading()  # once: its alerts and its panel judge one reading
            jobs = finish.jobs()
            datasets, alerts = (
                scan_datasets(tracker, jobs, self.writers, now) if tracker else ((), ())
            )
            inline = self.readers.inline
            if tracker is not None:
                inline("dataset ages", None, lambda: self.long_lived.settle(tracker, len(datasets)))
            read = self._read_files_and_proc(jobs, probes.gpus, pipeline)
            alerts += (
                *read.job_alerts,
                *inline("probe", NO_ALERTS, lambda: tuple(probes.alerts(now, jobs))),
                *inline("clock steps", NO_ALERTS, lambda: tuple(self.wall_clock.alerts(now))),
                *inline("state folder", NO_ALERTS, lambda: tuple(self.state_health.alerts(now))),
                *inline("training", NO_ALERTS, lambda: tuple(training_alerts(read.training, now))),
                *inline(
                    "plans",
                    NO_ALERTS,
                    lambda: tuple(plan_alerts(read.hidden_states_plan, jobs, now)),
                ),
            )
            root = tracker.config.root if tracker is not None else None
            taken = Snapshot(
                now, socket.gethostname(), root, datasets, alerts, jobs,
                probes.server, read.gpus, probes.gpus.note,
                read.training, read.export, read.evaluation, read.hidden_states_plan,
            )  # fmt: skip
            finished = inline("daemon's own alerts", taken, lambda: finish.alerts(taken))
            return replace(finished, alerts=finished.alerts + self.readers.alerts(now))

    def _read_files_and_proc(
        self, jobs: tuple[JobInfo, ...], gpus: GpuReading, pipeline: PipelineConfig
    ) -> JobReadings:
        """What the jobs' logs, reports, scripts and /proc say; blocking, so run in a thread.

        The readers of files the jobs write (training logs and configs, the reports) run bounded
        in time; the rest here read the agent's own records and /proc.
        """
        inline, bounded = self.readers.inline, self.readers.bounded
        inline("wall clock", None, self.wall_clock.observe)
        inline("job end ages", None, lambda: self.wall_clock.keep_only(jobs))
        export, evaluation = bounded("reports", NO_REPORTS, lambda: self._reports(jobs))
        return JobReadings(
            inline("GPU holders", gpus.gpus, lambda: gpus_with_holders(gpus.gpus, jobs)),
            bounded("training", (), lambda: self.training.progress(jobs)),
            export,
            evaluation,
            inline(
                "job",
                [],
                lambda: (
                    job_alerts(jobs, time.time(), self.wall_clock.ended_age_s)
                    + orphan_alerts(jobs, time.time())
                ),
            ),
            bounded("hidden-states plan", None, lambda: self._plan(pipeline, export, jobs)),
        )

    def _plan(
        self, pipeline: PipelineConfig, export: ExportSummary | None, jobs: tuple[JobInfo, ...]
    ) -> HiddenStatesPlan | None:
        floor = pipeline.datasets.low_disk_floor_bytes if pipeline.datasets is not None else 0

        def progress(name: str, folder: Path) -> Progress:
            return self.capture_meter.progress(name, running_id(jobs, name), folder)

        return hidden_states_plan(pipeline, export, self.jobs_folder, floor, progress)

    def _reports(self, jobs: tuple[JobInfo, ...]) -> Reports:
        return self.reports.export(jobs), self.reports.evaluation(jobs)


@dataclass(frozen=True, slots=True)
class Finish:
    """What the daemon adds around a snapshot, both called in the snapshot's thread."""

    jobs: Callable[[], tuple[JobInfo, ...]]
    """Every job the snapshot shows (blocking)."""
    alerts: Callable[[Snapshot], Snapshot]
    """The snapshot with the daemon's own alerts (the guard's, the webhook's)."""


def scan_datasets(
    tracker: DatasetTracker, jobs: tuple[JobInfo, ...], writers: WriterFinder, now: float
) -> tuple[tuple[DatasetProgress, ...], tuple[Alert, ...]]:
    """One scan of every dataset at wall time `now`: progress (with who writes each) and alerts.

    A root that cannot be listed is one alert. Blocking (the descriptor scan walks /proc): run
    it in a thread.
    """
    try:
        listing = tracker.listing()
        found = writers.find(tracker.dataset_files(listing.names), jobs)
        datasets = tracker.progress(now, jobs, found, listing)
    except DatasetsRootError as exc:
        return (), (Alert("datasets_root", "error", str(exc), tracker.config.root, now),)
    return datasets, tuple(tracker.alerts(datasets, now))


def _reason(job: JobInfo) -> str:
    """The words after a failed job's exit code: its reason, where it left one; else nothing."""
    return f": {job.exit_reason}" if job.exit_reason else ""


def gpus_with_holders(
    gpus: tuple[GpuSample, ...], jobs: tuple[JobInfo, ...]
) -> tuple[GpuSample, ...]:
    """Each GPU with the ids of the agent's jobs whose process group holds memory on it."""
    by_group = {job.pgid: job.id for job in jobs if job.pgid is not None}
    return tuple(
        replace(gpu, job_ids=tuple(sorted({
            by_group[info.pgid] for pid in gpu.pids
            if (info := process_info(pid)) is not None and info.pgid in by_group
        })))
        for gpu in gpus
    )  # fmt: skip


def job_alerts(
    jobs: tuple[JobInfo, ...], now: float, ended_age_s: Callable[[JobInfo], float] | None = None
) -> list[Alert]:
    """An alert for every job that failed (exit code other than 0) or was lost, or just ended.

    `ended_age_s` ages a job's end (the shim's wall stamp) safely across clock steps. A failure
    that a later run of the same job on the same dataset has followed is over: it no longer
    alerts (status listed a run's old key error after the next run succeeded).
    """
    age_s = ended_age_s or (lambda job: now - (job.ended_at or now))
    latest = _latest_starts(jobs)
    return [
        Alert(
            "job_failed", "error",
            f"job {job.name}{' (' + job.dataset + ')' if job.dataset else ''} "
            + (f"exited with code {job.exit_code}{_reason(job)}" if job.state == "failed"
               else "was lost: its process is gone and left no exit status"),
            job.id, now,
        )
        for job in jobs
        if job.state in ("failed", "lost") and (job.started_at or 0.0) >= latest[_run_of(job)]
    ] + [
        Alert("job_exited", "info", f"job {job.name}{' (' + job.dataset + ')' if job.dataset else ''} "
              f"finished ({job.state}{', code ' + str(job.exit_code) if job.exit_code is not None else ''})",
              job.id, now)
        for job in jobs
        if job.state in ("exited", "killed", "stopped") and job.ended_at is not None and age_s(job) < RECENT_EXIT_S
    ] + [
        Alert("stale_code", "warning", f"job {job.name} runs {script} as it was at launch; the file "
              "on disk has changed since: restart the job to run the new code", job.id, now)
        for job in jobs
        if job.state == "running" and (script := stale_script(job)) is not None
    ]  # fmt: skip


def _run_of(job: JobInfo) -> tuple[str, str | None]:
    return job.name, job.dataset


def _latest_starts(jobs: tuple[JobInfo, ...]) -> dict[tuple[str, str | None], float]:
    """When the latest run of each job (per dataset) started."""
    latest: dict[tuple[str, str | None], float] = {}
    for job in jobs:
        key = _run_of(job)
        latest[key] = max(latest.get(key, 0.0), job.started_at or 0.0)
    return latest
