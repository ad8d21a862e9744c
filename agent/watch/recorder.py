"""From the observer's snapshots to history: dataset points and the events between two scans.

The recorder listens to every snapshot the observer takes (so history is kept with no console
attached) and writes what changed: a point per dataset while it grows (at most one a second,
one a minute while it does not), and events — a job started or ended, an alert raised or
cleared, a budget reached, the server going up or down. Requests that change things (a stop, a
deploy, a rollback) reach it from the audit log, with who asked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from agent.protocol import LIVE_JOB_STATES, Alert, JobInfo, Snapshot
from agent.tasks import TaskOwner
from agent.watch.history import History, Point

log = logging.getLogger(__name__)

POINT_STEP_S = 1.0
"""A growing dataset gets a point at most this often."""
QUIET_POINT_S = 60.0
"""A dataset that does not grow still gets a point this often (rates read zero, not nothing)."""
EventRow = tuple[str, str, str, str, dict[str, Any]]
"""(kind, subject, message, severity, detail) of one event to record."""
ENDED_KINDS = {"stopped": "job_stopped", "killed": "job_stopped", "failed": "job_failed"}
ASKED_METHODS = {"files.install": "deploy", "files.rollback": "rollback"}
RECORDED_SEVERITIES = ("warning", "error")
"""Info alerts (a job just exited) repeat what the job events say; they are not recorded."""


@dataclass
class Seen:
    """What the previous snapshot held, to tell what changed since."""

    points: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Each dataset's last point: (when, tokens)."""
    tokens: dict[str, int] = field(default_factory=dict)
    jobs: dict[str, str] = field(default_factory=dict)
    alerts: dict[tuple[str, str], Alert] = field(default_factory=dict)
    server_healthy: bool | None = None
    first: bool = True


class Recorder:
    """Writes the observer's snapshots into the history, as points and events."""

    def __init__(self, history: History, tasks: TaskOwner) -> None:
        self.history = history
        self.tasks = tasks
        self._seen = Seen()
        self._asked_by: dict[str, str] = {}
        """Who asked to stop each job, until its end is recorded."""

    async def heard(self, snapshot: Snapshot) -> None:
        """Record what changed since the last snapshot (an observer listener)."""
        now = snapshot.taken_at
        await self.history.add_points(self._points(snapshot))
        for kind, subject, message, severity, detail in self._events(snapshot):
            await self.history.add_event(kind, subject, message, severity, now, **detail)
        self._seen.first = False
        await self.history.prune_if_due(now)

    def audited(self, client: str, method: str, params: Any, key: str | None, outcome: str) -> None:
        """An audit listener: a deploy or rollback is an event; a stop says who asked for it."""
        if outcome != "ok":
            return
        if method == "jobs.stop":
            self._asked_by[params.job_id] = client
            return
        kind = ASKED_METHODS.get(method)
        if kind is not None:
            target = str(getattr(params, "target", ""))
            write = self.history.add_event(kind, target, f"{kind} of {target}", asked_by=client)
            _ = self.tasks.spawn(write, f"history: {kind}")

    def stopping(self, job_id: str, asked_by: str) -> None:
        """Note who stops a job (the budget guard), for the event of its end."""
        self._asked_by[job_id] = asked_by

    def _points(self, snapshot: Snapshot) -> list[Point]:
        points = []
        for item in snapshot.datasets:
            last = self._seen.points.get(item.name)
            since = snapshot.taken_at - last[0] if last else None
            grew = last is None or last[1] != item.tokens
            if since is None or since >= (POINT_STEP_S if grew else QUIET_POINT_S):
                points.append(Point(item.name, snapshot.taken_at, item.tokens, item.responses))
                self._seen.points[item.name] = (snapshot.taken_at, item.tokens)
        return points

    def _events(self, snapshot: Snapshot) -> list[EventRow]:
        return (
            self._budget_events(snapshot) + self._job_events(snapshot.jobs)
            + self._alert_events(snapshot.alerts) + self._server_events(snapshot)
        )  # fmt: skip

    def _budget_events(self, snapshot: Snapshot) -> list[EventRow]:
        events = []
        for item in snapshot.datasets:
            before = self._seen.tokens.get(item.name)
            self._seen.tokens[item.name] = item.tokens
            if before is None and self._seen.first:
                continue  # the agent's first look after a start: what it finds is no news
            if item.budget is not None and (before or 0) < item.budget <= item.tokens:
                message = (
                    f"{item.name} reached its budget: {item.tokens:,} of {item.budget:,} tokens"
                )
                events.append(("budget_reached", item.name, message, "info",
                               {"tokens": item.tokens, "budget": item.budget}))  # fmt: skip
        return events

    def _job_events(self, jobs: tuple[JobInfo, ...]) -> list[EventRow]:
        events = []
        for job in jobs:
            before = self._seen.jobs.get(job.id)
            self._seen.jobs[job.id] = job.state
            if job.state in LIVE_JOB_STATES and before is None and not self._seen.first:
                events.append(("job_started", job.id, f"{_named(job)} started", "info",
                               {"dataset": job.dataset, "pid": job.pid}))  # fmt: skip
            elif job.state not in LIVE_JOB_STATES and before in LIVE_JOB_STATES:
                events.append(self._ended(job))
        present = {job.id for job in jobs}
        for gone in [job_id for job_id in self._seen.jobs if job_id not in present]:
            if self._seen.jobs.pop(gone) in LIVE_JOB_STATES:  # an external process that ended
                who = self._asked_by.pop(gone, None)
                events.append(("job_exited", gone, f"{gone} is gone", "info", {"asked_by": who}))
        return events

    def _ended(self, job: JobInfo) -> EventRow:
        kind = ENDED_KINDS.get(job.state, "job_exited")
        asked_by = self._asked_by.pop(job.id, None)
        code = f", code {job.exit_code}" if job.exit_code is not None else ""
        severity = "error" if kind == "job_failed" else "info"
        detail = {"dataset": job.dataset, "exit_code": job.exit_code, "asked_by": asked_by,
                  "state": job.state, "reason": job.exit_reason}  # fmt: skip
        why = f": {job.exit_reason}" if job.exit_reason else ""
        return kind, job.id, f"{_named(job)} ended ({job.state}{code}){why}", severity, detail

    def _alert_events(self, alerts: tuple[Alert, ...]) -> list[EventRow]:
        now = {(a.kind, a.subject): a for a in alerts if a.severity in RECORDED_SEVERITIES}
        raised = [a for key, a in now.items() if key not in self._seen.alerts]
        cleared = [a for key, a in self._seen.alerts.items() if key not in now]
        self._seen.alerts = now
        events: list[EventRow] = [
            ("alert_raised", a.subject, a.message, a.severity, {"alert": a.kind}) for a in raised
        ]
        return events + [
            ("alert_cleared", a.subject, _cleared(a), "info", {"alert": a.kind}) for a in cleared
        ]

    def _server_events(self, snapshot: Snapshot) -> list[EventRow]:
        healthy = snapshot.server.healthy if snapshot.server is not None else None
        before, self._seen.server_healthy = self._seen.server_healthy, healthy
        if healthy is None or before is None or healthy == before:
            return []
        if healthy:
            return [
                ("server_up", "sglang", "the SGLang server answers its health check", "info", {})
            ]
        stopped = _stopped_server(snapshot.jobs)
        if stopped is not None:  # the autopilot freeing the GPUs, k: not a failure
            said = f"the SGLang server stopped answering: job {stopped.name} was stopped on request"
            return [("server_down", "sglang", said, "info", {})]
        return [("server_down", "sglang", "the SGLang server stopped answering", "error", {})]


def _stopped_server(jobs: tuple[JobInfo, ...]) -> JobInfo | None:
    """The agent's latest server job, when a stop asked for ended it or is ending it."""
    servers = sorted(
        (j for j in jobs if j.kind == "server" and not j.external), key=lambda j: j.started_at or 0
    )
    return servers[-1] if servers and servers[-1].state in ("stopping", "stopped") else None


def _cleared(alert: Alert) -> str:
    """What ended, not the advice the alert gave while it stood (that now reads as an order)."""
    subject = f" on {alert.subject}" if alert.subject else ""
    return f"{alert.kind.replace('_', ' ')}{subject} cleared"


def _named(job: JobInfo) -> str:
    return f"job {job.name}" + (f" ({job.dataset})" if job.dataset else "")
