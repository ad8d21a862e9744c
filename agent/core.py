"""What the agent knows and does, independent of any one connection.

One `AgentCore` lives as long as the daemon; consoles come and go through sessions that call
its handlers. Handlers take a typed params dataclass and return a typed result dataclass.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from typing import Any

from agent.bundle import running_bundle_sha256
from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.tracker import DatasetTracker
from agent.errors import AgentError
from agent.jobs.control import JobControl
from agent.jobs.end_watch import EndWatch
from agent.jobs.leftovers import LeftoverSweep
from agent.jobs.supervisor import Supervisor
from agent.operations.announce import Announcer
from agent.operations.autopilot import Autopilot
from agent.operations.disk_stop_loss import DiskStopLoss
from agent.operations.operations import SHOWN_IN_SNAPSHOT, Operations
from agent.operations.peak_stop import PeakStop
from agent.operations.restarts import Restarts
from agent.plans.drafter_checks import DrafterChecks
from agent.plans.hidden_states_checks import HiddenStatesChecks, PlanEvents
from agent.probes.cache import REFRESH_S, ProbeCache
from agent.probes.tokenizer import check_tokenizer
from agent.protocol import (
    AGENT_VERSION,
    PROTOCOL_VERSION,
    AutopilotStatus,
    AutopilotStatusParams,
    DrafterCheck,
    DrafterCheckParams,
    ErrorCode,
    Event,
    HelloParams,
    HelloResult,
    JobEvent,
    NotifyStatus,
    NotifyStatusParams,
    PingParams,
    PingResult,
    PipelineApplied,
    PipelineApplyParams,
    PipelineConfig,
    Request,
    Snapshot,
    SnapshotParams,
    TokenizerCheck,
    TokenizerCheckParams,
    from_wire,
    pipeline_differences,
    to_wire,
)
from agent.serving.audit import AuditLog
from agent.serving.file_methods import FileMethods
from agent.serving.idempotency import IdempotentRequests
from agent.serving.idempotency_store import AnswerStore
from agent.serving.log_methods import LogMethods
from agent.serving.record_methods import RecordMethods
from agent.state import StatePaths, read_json, write_json_atomic
from agent.state.health import StateHealth
from agent.tasks import TaskOwner
from agent.watch.guard import BudgetGuard
from agent.watch.history import History
from agent.watch.notify import Notifier
from agent.watch.observer import Observer
from agent.watch.recorder import Recorder
from agent.watch.scan_store import ScanStore
from agent.watch.snapshot_assembly import Finish, SnapshotAssembly

Handler = Callable[[Request[Any]], Awaitable[object]]
"""A handler whose params type is not known statically: what a table of mixed methods holds."""
Broadcast = Callable[[Event], Coroutine[Any, Any, None]]
PROBE_WATCHED_S = REFRESH_S
"""How often the server and GPUs are probed while a console watches."""
PROBE_IDLE_S = 15.0
"""The same with nobody watching: server up/down still reaches the history and the webhook."""
FIRST_PROBE_WAIT_S = 10.0
"""How long a console's snapshot request waits for the agent's first probe of its server."""
KEEP_SCANS_WAIT_S = 2.0
"""At the stop, a snapshot still reading the datasets is waited for this long before keeping."""


class AgentCore:
    """The daemon's long-lived state and the parts that keep watch and act.

    It answers what is about the agent itself (hello, ping, snapshot, the autopilot's and the
    webhook's status); files, logs and records have handlers of their own (agent/serving/).
    """

    def __init__(self, paths: StatePaths, broadcast: Broadcast) -> None:
        self.paths = paths
        self.started_at = time.time()
        self.pipeline, self.pipeline_kept = _load_pipeline(paths)
        """The config we run, and whether one was ever taken (else the first hello's is)."""
        self.history = History(paths.root)
        self.state_health = StateHealth(paths.root)
        self.scans = ScanStore(paths.kept_scans, self.state_health)
        """How far each followed file was read: a restarted agent resumes there (DESIGN §5)."""
        self._tracker = self._tracker_for(self.pipeline)
        self.broadcast = broadcast
        self.tasks = TaskOwner("agent")
        """Owns the daemon's own background work; closed on shutdown, after the sessions."""
        self.audit = AuditLog(paths.audit_log)
        self.idempotent = IdempotentRequests(
            answer_errors=(AgentError,), idempotent_methods=frozenset({"jobs.launch"}),
            store=AnswerStore(paths.idempotency), error_of=AgentError, tasks=self.tasks,
        )  # fmt: skip
        self.supervisor = Supervisor(paths.root, self._job_event, self.state_health.failed)
        self.probes = ProbeCache(self.tasks)
        self.changed = asyncio.Event()
        """Set on every job event (and by a new watcher); the observer clears it as it scans."""
        self.end_watch = EndWatch(self.changed.set)
        """Wakes the observer the moment a job ends (restarts and the autopilot act on it)."""
        self.drafter_checks = DrafterChecks(self.tasks, lambda: self.pipeline)
        """The check of the checkpoint the drafter server serves: its gate and its verdict."""
        self.jobs = JobControl(
            self.supervisor, self.probes, self.state_health, lambda: self.pipeline,
            lambda: self._tracker, self._snapshot_now, self.end_watch, self.drafter_checks,
        )  # fmt: skip
        """Every launch and stop, whoever asks: the one-writer rule and the GPU guard live there."""
        self.assembly = SnapshotAssembly(
            self.probes, self.jobs.writers, self.state_health, self.supervisor.registry.root
        )
        self.observer = Observer(self._snapshot_now, self.files_signature, self.changed)
        """The one scanner: the daemon runs it on `tasks`; sessions only receive from it."""
        self.recorder = Recorder(self.history, self.tasks)
        self.observer.listeners.append(self.recorder.heard)
        self.audit.listeners.append(self.recorder.audited)
        self.guard = BudgetGuard(
            lambda: self.pipeline, self.supervisor.stop, self.jobs.stop_adopted, self.audit,
            self.history, self.recorder, self.tasks,
        )  # fmt: skip
        self.observer.listeners.append(self.guard.heard)
        self.notifier = Notifier(lambda: self.pipeline, self.tasks)
        self.observer.listeners.append(self.notifier.heard)
        self.announcer = Announcer(self.history, self.notifier, broadcast, self.tasks)
        self.operations = Operations(
            paths.root, self.jobs, self.announcer, self.tasks, self.state_health.failed
        )
        """Redeploys and starts on many datasets: asked once, carried here to their end."""
        self.restarts = Restarts(
            self.supervisor.registry, self.jobs, self.announcer, self.tasks,
            self.operations.handles_end_of,
        )  # fmt: skip
        self.observer.listeners.append(self.restarts.heard)
        self.autopilot = Autopilot(
            paths.root, self.jobs, self.announcer, self.tasks, self.state_health.failed,
            self.changed.set,
        )  # fmt: skip
        self.observer.listeners.append(self.autopilot.heard)
        self.peak_stop = PeakStop(self.jobs, self.announcer, self.tasks)
        self.observer.listeners.append(self.peak_stop.heard)
        self.disk_stop_loss = DiskStopLoss(self.jobs, self.announcer, self.tasks)
        self.observer.listeners.append(self.disk_stop_loss.heard)
        self.hidden_states_checks = HiddenStatesChecks(self.tasks)
        self.observer.listeners.append(self.hidden_states_checks.heard)
        self.observer.listeners.append(self.drafter_checks.heard)
        self.observer.listeners.append(PlanEvents(self.announcer).heard)
        self.observer.listeners.append(self.end_watch.heard)
        self.leftovers = LeftoverSweep(self.supervisor, self.tasks)
        """A lost job's processes that outlived it (its shim gone) are ended by its mark."""
        self.observer.listeners.append(self.leftovers.heard)
        self.files = FileMethods(lambda: self.pipeline, self.operations.staged_paths)
        self.logs = LogMethods(paths.daemon_log, lambda: self.pipeline, self.supervisor)
        self.records = RecordMethods(
            lambda: self.pipeline, self.jobs.dataset_names, self.history, self.audit
        )
        self._finish = Finish(self.jobs.all_jobs, self._with_own_alerts)

    async def hello(self, request: Request[HelloParams]) -> HelloResult:
        """Check the console speaks our protocol, and compare its config with the one we run.

        Looking never changes what the box does (#30): the console's config is taken only by an
        agent that runs none yet; otherwise the answer names how it differs, and only
        `pipeline.apply`, asked for on purpose, replaces it.
        """
        params = request.params
        if params.protocol_version != PROTOCOL_VERSION:
            raise AgentError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"console {params.client_version} speaks protocol {params.protocol_version}, "
                f"agent {AGENT_VERSION} speaks protocol {PROTOCOL_VERSION}; "
                "run the same eagle-console version on both sides",
            )
        wanted = params.pipeline
        if wanted is not None:
            _check_notify(wanted)
        taken = wanted is not None and not self.pipeline_kept
        if wanted is not None and taken:
            self._run_pipeline(wanted)
        return HelloResult(
            protocol_version=PROTOCOL_VERSION,
            agent_version=AGENT_VERSION,
            bundle_sha256=running_bundle_sha256(),
            pid=os.getpid(),
            host_name=socket.gethostname(),
            started_at=self.started_at,
            pipeline_taken=taken,
            pipeline_differences=self.differences_from(wanted),
        )

    async def pipeline_apply(
        self, request: Request[PipelineApplyParams], client: str
    ) -> PipelineApplied:
        """Run the console's config from now on (asked for on purpose); names what changed."""
        wanted = request.params.pipeline
        _check_notify(wanted)
        differences = self.differences_from(wanted)
        if differences or not self.pipeline_kept:
            self._run_pipeline(wanted)
        if differences:
            message = f"config applied by {client}: {'; '.join(differences)}"
            await self.history.add_event("config_applied", "pipeline", message, asked_by=client)
        return PipelineApplied(differences)

    def differences_from(self, wanted: PipelineConfig | None) -> tuple[str, ...]:
        """How a console's config differs from the one running; () when it sent none."""
        return pipeline_differences(self.pipeline, wanted) if wanted is not None else ()

    def refuse_if_differs(self, wanted: PipelineConfig | None) -> None:
        """Refuse to start anything for a console whose config is not the one we run.

        It would start the jobs of our config while its user reads theirs: the stale-copy
        mistake this console exists to prevent.
        """
        differences = self.differences_from(wanted)
        if differences:
            raise AgentError(
                ErrorCode.CONFIG_DIFFERS,
                f"this console's config differs from the one the agent runs "
                f"({'; '.join(differences)}); nothing was started: apply it on purpose first "
                "(`eagle-console apply HOST`), or use the config the agent runs",
            )

    def _run_pipeline(self, pipeline: PipelineConfig) -> None:
        """Replace the config we run, and keep it for a restarted daemon."""
        self.pipeline = pipeline
        self.pipeline_kept = True
        self._tracker = self._tracker_for(pipeline)
        self.changed.set()  # a new tracker follows no file yet: only a scan shows it growth
        try:  # a full state folder must not refuse the console
            write_json_atomic(self.paths.pipeline_config, to_wire(pipeline))
        except OSError as exc:
            self.state_health.failed(exc)
        else:
            self.state_health.wrote(self.paths.pipeline_config)

    async def ping(self, request: Request[PingParams]) -> PingResult:
        """The agent's clock."""
        return PingResult(agent_time=time.time())

    async def tokenizer_check(self, request: Request[TokenizerCheckParams]) -> TokenizerCheck:
        """Load the configured tokenizer with the configured trust setting, bounded in time."""
        params = request.params
        return await check_tokenizer(self.pipeline, params.timeout_s)

    async def drafter_check(self, request: Request[DrafterCheckParams]) -> DrafterCheck:
        """Check a drafter checkpoint now: the path asked for, else the one to serve."""
        return await self.drafter_checks.check_now(await self._snapshot_now(), request.params.path)

    async def autopilot_status(self, request: Request[AutopilotStatusParams]) -> AutopilotStatus:
        """Where the autopilot stands, with the restarts counted from a fresh snapshot."""
        return self.autopilot.status(await self._snapshot_now())

    async def notify_status(self, request: Request[NotifyStatusParams]) -> NotifyStatus:
        """How the webhook has fared since the daemon started (for `doctor`)."""
        return self.notifier.status()

    def keep_scans(self) -> None:
        """Keep every followed file's scan and write what waits (blocking: at the daemon's stop)."""
        tracker = self._tracker
        if tracker is not None:
            self.assembly.while_not_reading(tracker.keep_scans, KEEP_SCANS_WAIT_S)
        self.scans.close()

    def files_signature(self) -> tuple[tuple[int, int], ...]:
        """(size, mtime) of every responses file followed: changes when any dataset grows."""
        return self._tracker.signature() if self._tracker is not None else ()

    async def _job_event(self, event: JobEvent) -> None:
        await self.broadcast(Event("job", event))
        self.changed.set()

    async def snapshot(self, request: Request[SnapshotParams]) -> Snapshot:
        """Everything the dashboard shows, now.

        Asked right after the agent starts, it waits (10 s at most) for the first probe
        of the configured server: the first `status --json` said `"server": null` (#37).
        """
        self.probes.refresh_if_stale(self.pipeline, PROBE_IDLE_S)
        await self.probes.first_reading(FIRST_PROBE_WAIT_S)
        return await self._snapshot_now()

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
            taken, alerts=taken.alerts + tuple(notices), operations=self.operations.recent(now, SHOWN_IN_SNAPSHOT),
            autopilot=self.autopilot.status(taken),
            hidden_states_check=self.hidden_states_checks.latest(),
            drafter_check=self.drafter_checks.latest(),
        )  # fmt: skip

    def _tracker_for(self, pipeline: PipelineConfig) -> DatasetTracker | None:
        if pipeline.datasets is None:
            return None
        return DatasetTracker(
            pipeline.datasets, earlier=self.history.rate_points, keeper=ScanKeeper(self.scans)
        )

    async def _snapshot_now(self) -> Snapshot:
        probe_every_s = PROBE_WATCHED_S if self.observer.watched else PROBE_IDLE_S
        return await self.assembly.take(self._finish, self._tracker, self.pipeline, probe_every_s)


def _load_pipeline(paths: StatePaths) -> tuple[PipelineConfig, bool]:
    """The config kept in the state folder, and whether there was one that reads."""
    saved = read_json(paths.pipeline_config)
    try:
        return from_wire(PipelineConfig, saved), True
    except ValueError:
        return PipelineConfig(), False


def _check_notify(pipeline: PipelineConfig) -> None:
    notify = pipeline.notify
    if notify is not None and urllib.parse.urlsplit(notify.url).scheme not in ("http", "https"):
        raise AgentError(  # the console's config refuses it too; a peer's may not
            ErrorCode.INVALID_PARAMS, "notify.url must be an http or https URL"
        )
