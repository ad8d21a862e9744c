"""Snapshot assembly: everything the dashboard shows, put together from the agent's observers.

The datasets scan and the /proc walks run in a thread; this module decides what is in a
snapshot, never what a request may do (that is `agent.core`'s).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from agent.datasets.root_listing import DatasetsRootError
from agent.datasets.tracker import DatasetTracker
from agent.datasets.writers import WriterFinder
from agent.host.procfs import process_info
from agent.host.wall_clock import WallClockWatch
from agent.jobs.supervisor import stale_script
from agent.probes.cache import ProbeCache
from agent.probes.pipeline_reports import PipelineReports
from agent.probes.training import TrainingWatch
from agent.protocol import (
    Alert,
    DatasetProgress,
    DrafterEvaluation,
    ExportSummary,
    GpuSample,
    JobInfo,
    PipelineConfig,
    Snapshot,
    TrainingProgress,
)
from agent.state.health import StateHealth

RECENT_EXIT_S = 600.0
"""Jobs that ended this recently are announced as job_exited."""
Scan = tuple[tuple[DatasetProgress, ...], tuple[Alert, ...]]


@dataclass(frozen=True, slots=True)
class JobReadings:
    """The parts of a snapshot read from job logs, report files, scripts and /proc."""

    gpus: tuple[GpuSample, ...]
    training: tuple[TrainingProgress, ...]
    export: ExportSummary | None
    evaluation: DrafterEvaluation | None
    job_alerts: list[Alert]


class SnapshotAssembly:
    """The observers a snapshot is made of, and the one datasets scan callers share."""

    def __init__(
        self, probes: ProbeCache, writers: WriterFinder, state_health: StateHealth
    ) -> None:
        self.probes = probes
        self.writers = writers
        self.state_health = state_health
        self.training = TrainingWatch()
        self.reports = PipelineReports()
        self.wall_clock = WallClockWatch()
        self._scan: asyncio.Future[Scan] | None = None
        self._scan_tracker: DatasetTracker | None = None
        self._reading = threading.Lock()
        """The training and report readers keep offsets: one thread at a time reads through them."""

    async def take(
        self, jobs: tuple[JobInfo, ...], tracker: DatasetTracker | None, pipeline: PipelineConfig
    ) -> Snapshot:
        """Everything the dashboard shows, now, for these jobs and this host's pipeline."""
        datasets, alerts = await self._scan_datasets(jobs, tracker)
        self.probes.refresh_if_stale(pipeline)
        self.wall_clock.observe()
        self.wall_clock.keep_only(jobs)
        read = await asyncio.to_thread(self._read_files_and_proc, jobs)
        alerts += read.job_alerts
        alerts += self.probes.alerts(time.time(), jobs) + self.wall_clock.alerts(time.time())
        alerts += self.state_health.alerts(time.time())
        root = tracker.config.root if tracker is not None else None
        return Snapshot(
            time.time(), socket.gethostname(), root, datasets, tuple(alerts), jobs,
            self.probes.server, read.gpus, self.probes.gpus.note,
            read.training, read.export, read.evaluation,
        )  # fmt: skip

    def _read_files_and_proc(self, jobs: tuple[JobInfo, ...]) -> JobReadings:
        """What the jobs' logs, reports, scripts and /proc say; blocking, so run in a thread."""
        with self._reading:
            return JobReadings(
                gpus_with_holders(self.probes.gpus.gpus, jobs),
                self.training.progress(jobs),
                self.reports.export(jobs),
                self.reports.evaluation(jobs),
                job_alerts(jobs, time.time(), self.wall_clock.ended_age_s),
            )

    async def _scan_datasets(
        self, jobs: tuple[JobInfo, ...], tracker: DatasetTracker | None
    ) -> tuple[tuple[DatasetProgress, ...], list[Alert]]:
        """The datasets' progress and alerts, read in a thread so no request waits on the disk.

        Callers that arrive while a scan runs share it (snapshots for several consoles cost
        one scan); a caller that goes away does not cancel it for the others.
        """
        if tracker is None:
            return (), []
        scan = self._scan
        if scan is None or scan.done() or self._scan_tracker is not tracker:
            scan = asyncio.ensure_future(
                asyncio.to_thread(scan_datasets, tracker, jobs, self.writers)
            )
            self._scan, self._scan_tracker = scan, tracker
        datasets, alerts = await asyncio.shield(scan)
        return datasets, list(alerts)


def scan_datasets(
    tracker: DatasetTracker, jobs: tuple[JobInfo, ...], writers: WriterFinder
) -> tuple[tuple[DatasetProgress, ...], tuple[Alert, ...]]:
    """One scan of every dataset: progress (with who writes each) and alerts.

    A root that cannot be listed is one alert. Blocking (the descriptor scan walks /proc): run
    it in a thread.
    """
    now = tracker.clock.wall()
    try:
        found = writers.find(tracker.dataset_files(), jobs)
        datasets = tracker.progress(now, jobs, found)
    except DatasetsRootError as exc:
        return (), (Alert("datasets_root", "error", str(exc), tracker.config.root, now),)
    return datasets, tuple(tracker.alerts(datasets, now))


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

    `ended_age_s` ages a job's end (the shim's wall stamp) safely across clock steps.
    """
    age_s = ended_age_s or (lambda job: now - (job.ended_at or now))
    return [
        Alert(
            "job_failed", "error",
            f"job {job.name}{' (' + job.dataset + ')' if job.dataset else ''} "
            + (f"exited with code {job.exit_code}" if job.state == "failed" else "was lost: "
               "its process is gone and left no exit status"),
            job.id, now,
        )
        for job in jobs
        if job.state in ("failed", "lost")
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
