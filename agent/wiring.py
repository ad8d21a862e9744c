"""The daemon's parts, built once and each handed what it uses.

One `AgentParts` lives as long as the daemon. Building it is all it does: the state it keeps
(`agent/state`), the jobs it runs (`agent/jobs`), the one scanner and what listens to it
(`agent/watch`), the actors that act on what it sees (`agent/operations`, the budget guard, the
checks of `agent/plans`), and the one way a snapshot is taken. Requests are answered by
`agent/serving`, which uses these parts; nothing here answers a console.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.tracker import DatasetTracker
from agent.errors import AgentError
from agent.jobs.end_watch import EndWatch
from agent.jobs.leftovers import LeftoverSweep
from agent.jobs.supervisor import Supervisor
from agent.journal.audit import AuditLog
from agent.journal.idempotency import IdempotentRequests
from agent.journal.idempotency_store import AnswerStore
from agent.operations.announce import Announcer
from agent.operations.autopilot import Autopilot
from agent.operations.disk_stop_loss import DiskStopLoss
from agent.operations.job_control import JobControl
from agent.operations.operations import SHOWN_IN_SNAPSHOT, Operations
from agent.operations.peak_stop import PeakStop
from agent.operations.plan_events import PlanEvents
from agent.operations.restarts import Restarts
from agent.plans.drafter_checks import DrafterChecks
from agent.plans.hidden_states_checks import HiddenStatesChecks
from agent.probes.cache import REFRESH_S, ProbeCache
from agent.protocol import Event, JobEvent, PipelineConfig, Snapshot
from agent.state import StatePaths
from agent.state.health import StateHealth
from agent.state.running_config import RunningConfig
from agent.tasks import TaskOwner
from agent.watch.guard import BudgetGuard
from agent.watch.history import History
from agent.watch.notify import Notifier
from agent.watch.observer import Observer
from agent.watch.recorder import Recorder
from agent.watch.scan_store import ScanStore
from agent.watch.snapshot_assembly import Finish, SnapshotAssembly

Broadcast = Callable[[Event], Coroutine[Any, Any, None]]
PROBE_WATCHED_S = REFRESH_S
"""How often the server and GPUs are probed while a console watches."""
PROBE_IDLE_S = 15.0
"""The same with nobody watching: server up/down still reaches the history and the webhook."""
KEEP_SCANS_WAIT_S = 2.0
"""At the stop, a snapshot still reading the datasets is waited for this long before keeping."""


class AgentParts:
    """Every long-lived part of the daemon, built in the order each needs the others."""

    def __init__(self, paths: StatePaths, broadcast: Broadcast) -> None:
        self.paths = paths
        self.broadcast = broadcast
        self.started_at = time.time()
        self._build_state()
        self._build_jobs()
        self._build_watch()
        self._build_actors()
        self._build_checks()
        self._finish = Finish(self.jobs.all_jobs, self._with_own_alerts)

    def _build_state(self) -> None:
        """What the daemon keeps in its state folder, and the config it runs."""
        paths = self.paths
        self.history = History(paths.root)
        self.state_health = StateHealth(paths.root)
        self.config = RunningConfig(paths, self.state_health)
        self.scans = ScanStore(paths.kept_scans, self.state_health)
        """How far each followed file was read: a restarted agent resumes there."""
        self.tracker = self._tracker_for(self.config.pipeline)
        self.config.listeners.append(self._follow)
        self.tasks = TaskOwner("agent")
        """Owns the daemon's own background work; closed on shutdown, after the sessions."""
        self.audit = AuditLog(paths.audit_log)
        self.idempotent = IdempotentRequests(
            answer_errors=(AgentError,), idempotent_methods=frozenset({"jobs.launch"}),
            store=AnswerStore(paths.idempotency), error_of=AgentError, tasks=self.tasks,
        )  # fmt: skip

    def _build_jobs(self) -> None:
        """The jobs: their supervisor, the probes of the server, and every launch and stop."""
        self.supervisor = Supervisor(self.paths.root, self._job_event, self.state_health.failed)
        self.probes = ProbeCache(self.tasks)
        self.changed = asyncio.Event()
        """Set on every job event (and by a new watcher); the observer clears it as it scans."""
        self.end_watch = EndWatch(self.changed.set)
        """Wakes the observer the moment a job ends (restarts and the autopilot act on it)."""
        self.drafter_checks = DrafterChecks(self.tasks, self.config.current)
        """The check of the checkpoint the drafter server serves: its gate and its verdict."""
        self.jobs = JobControl(
            self.supervisor, self.probes, self.state_health, self.config.current,
            lambda: self.tracker, self.snapshot_now, self.end_watch, self.drafter_checks,
        )  # fmt: skip
        """Every launch and stop, whoever asks: the one-writer rule and the GPU guard live there."""

    def _build_watch(self) -> None:
        """The one scanner and what records what it sees."""
        self.assembly = SnapshotAssembly(
            self.probes, self.jobs.writers, self.state_health, self.supervisor.registry.root
        )
        self.observer = Observer(self.snapshot_now, self.files_signature, self.changed)
        """The one scanner: the daemon runs it on `tasks`; sessions only receive from it."""
        self.recorder = Recorder(self.history, self.tasks)
        self.audit.listeners.append(self.recorder.audited)
        self.notifier = Notifier(self.config.current, self.tasks)
        self.announcer = Announcer(self.history, self.notifier, self.broadcast, self.tasks)
        self._listen(self.recorder.heard)

    def _build_actors(self) -> None:
        """What acts on what the scanner sees: the guard, operations, restarts, the autopilot."""
        tasks, jobs, announcer = self.tasks, self.jobs, self.announcer
        self.guard = BudgetGuard(
            self.config.current, self.supervisor.stop, jobs.stop_adopted, self.audit,
            self.history, self.recorder, tasks,
        )  # fmt: skip
        self.operations = Operations(
            self.paths.root, jobs, announcer, tasks, self.state_health.failed
        )
        """Redeploys and starts on many datasets: asked once, carried here to their end."""
        self.restarts = Restarts(
            self.supervisor.registry, jobs, announcer, tasks, self.operations.handles_end_of
        )
        self.autopilot = Autopilot(
            self.paths.root, jobs, announcer, tasks, self.state_health.failed, self.changed.set
        )
        self.peak_stop = PeakStop(jobs, announcer, tasks)
        self.disk_stop_loss = DiskStopLoss(jobs, announcer, tasks)
        self.leftovers = LeftoverSweep(self.supervisor, tasks)
        """A lost job's processes that outlived it (its shim gone) are ended by its mark."""
        for actor in (self.guard, self.notifier, self.restarts, self.autopilot, self.peak_stop,
                      self.disk_stop_loss):  # fmt: skip
            self._listen(actor.heard)

    def _build_checks(self) -> None:
        """The checks of what the jobs wrote, and the listeners that follow every scan."""
        self.hidden_states_checks = HiddenStatesChecks(self.tasks)
        for heard in (
            self.hidden_states_checks.heard, self.drafter_checks.heard,
            PlanEvents(self.announcer).heard, self.end_watch.heard, self.leftovers.heard,
        ):  # fmt: skip
            self._listen(heard)

    def _listen(self, heard: Callable[[Snapshot], Coroutine[Any, Any, None]]) -> None:
        self.observer.listeners.append(heard)

    # ------------------------------------------------------------ the config and the datasets

    def _follow(self, pipeline: PipelineConfig) -> None:
        """A config applied: follow its datasets root (a new tracker follows no file yet)."""
        self.tracker = self._tracker_for(pipeline)
        self.changed.set()  # only a scan shows the new tracker's growth

    def _tracker_for(self, pipeline: PipelineConfig) -> DatasetTracker | None:
        if pipeline.datasets is None:
            return None
        return DatasetTracker(
            pipeline.datasets, earlier=self.history.rate_points, keeper=ScanKeeper(self.scans)
        )

    def keep_scans(self) -> None:
        """Keep every followed file's scan and write what waits (blocking: at the daemon's stop)."""
        tracker = self.tracker
        if tracker is not None:
            self.assembly.while_not_reading(tracker.keep_scans, KEEP_SCANS_WAIT_S)
        self.scans.close()

    def files_signature(self) -> tuple[tuple[int, int], ...]:
        """(size, mtime) of every responses file followed: changes when any dataset grows."""
        return self.tracker.signature() if self.tracker is not None else ()

    # ------------------------------------------------------------ snapshots and job events

    async def _job_event(self, event: JobEvent) -> None:
        await self.broadcast(Event("job", event))
        self.changed.set()

    async def snapshot_now(self) -> Snapshot:
        """Everything the dashboard shows, taken now."""
        probe_every_s = PROBE_WATCHED_S if self.observer.watched else PROBE_IDLE_S
        return await self.assembly.take(
            self._finish, self.tracker, self.config.pipeline, probe_every_s
        )

    def _with_own_alerts(self, taken: Snapshot) -> Snapshot:
        """Alerts of the guard, the webhook, the operations, the restarts and the history added.

        Also where the operations and the autopilot stand (called in the snapshot's thread).
        """
        taken = self.guard.with_alerts(taken)
        now = taken.taken_at
        notices = (
            self.notifier.alerts(now) + self.operations.alerts(now) + self.restarts.alerts(taken)
            + self.history.alerts(now) + self.hidden_states_checks.alerts(now)
            + self.drafter_checks.alerts(now)
        )  # fmt: skip
        return replace(
            taken, alerts=taken.alerts + tuple(notices),
            operations=self.operations.recent(now, SHOWN_IN_SNAPSHOT),
            autopilot=self.autopilot.status(taken),
            hidden_states_check=self.hidden_states_checks.latest(),
            drafter_check=self.drafter_checks.latest(),
        )  # fmt: skip
