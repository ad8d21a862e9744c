"""The budget guard: where the config says `guard = "stop"`, a dataset's writer stops at its budget.

The case it exists for: a runner started by hand with only `--max-samples`, heading hours past
its budget with nobody watching. It listens to the observer's snapshots (so it acts with no
console attached); when a dataset's tokens reach its budget it stops the writer — the agent's own
job with that job's stop plan, or an adopted process with the stop plan of the host's inference
job — so the answers in flight are kept. Each stop is an event in the history, a line in the
audit log and an alert; a writer it is already stopping (or that anyone is stopping) is never
stopped twice. `stall_guard_s` only raises an alert: a stalled writer may be waiting for good.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from agent.host.procfs import process_info
from agent.jobs.external import external_target
from agent.jobs.stopper import StopPlan, StopTarget, parse_signal
from agent.jobs.supervisor import EXTERNAL_PLAN
from agent.journal.audit import AuditLog
from agent.protocol import (
    LIVE_JOB_STATES,
    Alert,
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    PipelineConfig,
    Snapshot,
    StopResult,
)
from agent.tasks import TaskOwner
from agent.watch.history import History
from agent.watch.recorder import Recorder

log = logging.getLogger(__name__)

GUARD_CLIENT = "budget guard"
"""Who asked, in the audit log and the history."""
ALERT_FOR_S = 3600.0
"""A guard stop stays on the dashboard as an alert this long."""

StopOwn = Callable[[str], Awaitable[StopResult]]
StopAdopted = Callable[[str, StopTarget, StopPlan], Awaitable[StopResult]]


@dataclass(frozen=True, slots=True)
class WriterToStop:
    """The writer of a dataset, as the guard stops it."""

    key: str
    """The job id, or ext-PID-TICKS for a process the agent did not start."""
    name: str
    own: bool


class BudgetGuard:
    """Stops writers at their budget where configured, and raises the guard's alerts."""

    def __init__(
        self, pipeline: Callable[[], PipelineConfig], stop_own: StopOwn,
        stop_adopted: StopAdopted, audit: AuditLog, history: History, recorder: Recorder,
        tasks: TaskOwner,
    ) -> None:  # fmt: skip
        self._pipeline = pipeline
        self._stop_own = stop_own
        self._stop_adopted = stop_adopted
        self._audit = audit
        self._history = history
        self._recorder = recorder
        self._tasks = tasks
        self._stopping: set[str] = set()
        """Writers the guard has stopped or is stopping: each is stopped once."""
        self._alerts: list[Alert] = []

    async def heard(self, snapshot: Snapshot) -> None:
        """Stop every guarded writer at or past its budget (an observer listener)."""
        now = snapshot.taken_at  # old alerts go here, on the loop: `with_alerts` runs in a thread
        self._alerts = [a for a in self._alerts if now - a.raised_at < ALERT_FOR_S]
        config = self._pipeline().datasets
        if config is None:
            return
        for item in snapshot.datasets:
            if config.guard_of(item.name) != "stop" or not _at_budget(item):
                continue
            writer = await asyncio.to_thread(writer_to_stop, item, snapshot.jobs)
            if writer is not None and writer.key not in self._stopping:
                self._stopping.add(writer.key)
                _ = self._tasks.spawn(self._stop(item, writer), f"guard stop {item.name}")

    def with_alerts(self, snapshot: Snapshot) -> Snapshot:
        """`snapshot` with the guard's alerts: recent guard stops and stalled writers."""
        now = snapshot.taken_at
        recent = [a for a in tuple(self._alerts) if now - a.raised_at < ALERT_FOR_S]
        config = self._pipeline().datasets
        stalled = stall_alerts(snapshot, config) if config is not None else []
        if not recent and not stalled:
            return snapshot
        return replace(snapshot, alerts=snapshot.alerts + tuple(recent) + tuple(stalled))

    async def _stop(self, item: DatasetProgress, writer: WriterToStop) -> None:
        reason = (
            f"{item.name} reached its budget ({item.tokens:,} of {item.budget or 0:,} tokens) "
            f'with guard = "stop"'
        )
        log.info("budget guard: stopping %s: %s", writer.name, reason)
        self._recorder.stopping(writer.key, GUARD_CLIENT)
        try:
            result = await self._stopped(writer)
        except Exception as exc:
            log.exception("budget guard: stopping %s failed", writer.name)
            outcome = f"error: {exc}"
        else:
            outcome = result.outcome
        self._record(item, writer, reason, outcome)
        await self._history.add_event(
            "guard_stop", item.name, f"stopped {writer.name}: {reason} ({outcome})", "warning",
            writer=writer.key, tokens=item.tokens, budget=item.budget, outcome=outcome,
        )  # fmt: skip

    async def _stopped(self, writer: WriterToStop) -> StopResult:
        if writer.own:
            return await self._stop_own(writer.key)
        target = external_target(writer.key)
        if target is None:
            raise LookupError(f"{writer.key} names no process")
        return await self._stop_adopted(writer.key, target, adopted_plan(self._pipeline()))

    def _record(
        self, item: DatasetProgress, writer: WriterToStop, reason: str, outcome: str
    ) -> None:
        message = f"stopped {writer.name} of {item.name}: {reason} ({outcome})"
        self._alerts.append(Alert("budget_guard", "warning", message, item.name, time.time()))
        params = {"dataset": item.name, "writer": writer.key, "reason": reason}
        try:
            self._audit.record(GUARD_CLIENT, "guard.stop", params, None, outcome)
        except OSError as exc:
            log.warning("audit line for the guard stop of %s lost: %s", item.name, exc)


def _at_budget(item: DatasetProgress) -> bool:
    return item.budget is not None and item.tokens >= item.budget


def writer_to_stop(item: DatasetProgress, jobs: tuple[JobInfo, ...]) -> WriterToStop | None:
    """The dataset's writer the guard would stop; None when none, or it is stopping already.

    The agent's own running job for the dataset comes first; else the process found writing it
    (a runner started by hand), named by pid and start time so a reused pid is never hit.
    """
    for job in jobs:
        if job.dataset == item.name and not job.external and job.state in LIVE_JOB_STATES:
            return (
                None if job.state == "stopping" else WriterToStop(job.id, f"job {job.name}", True)
            )
    if item.writer_pid is None or item.writer_stopped:
        return None
    info = process_info(item.writer_pid)
    if info is None or not info.alive:
        return None
    return WriterToStop(
        f"ext-{item.writer_pid}-{info.start_ticks}", f"pid {item.writer_pid}", False
    )


def adopted_plan(pipeline: PipelineConfig) -> StopPlan:
    """How to stop a writer the agent did not start: as the host's inference job would stop."""
    spec = next((spec for spec in pipeline.jobs.values() if spec.kind == "inference"), None)
    if spec is None:
        return EXTERNAL_PLAN
    return StopPlan(parse_signal(spec.stop_signal), spec.grace_s, spec.term_grace_s)


def stall_alerts(snapshot: Snapshot, config: DatasetsConfig) -> list[Alert]:
    """An error alert per writer that appended nothing for `stall_guard_s` with a healthy server."""
    limit = config.stall_guard_s
    healthy = snapshot.server is not None and snapshot.server.healthy is True
    if limit is None or not healthy:
        return []
    return [
        Alert("writer_stalled", "error",
              f"{item.name}: its writer appended nothing for {age:,.0f} s "
              f"while the server is healthy (stall_guard_s = {limit:g})", item.name,
              snapshot.taken_at)
        for item in snapshot.datasets
        if item.writer_active
        and (age := item.last_response_age_s(snapshot.taken_at)) is not None and age >= limit
    ]  # fmt: skip
