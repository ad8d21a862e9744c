"""The agent's timeline, as `events.list` returns it: what happened, whether or not anyone watched."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SINCE_S = 2 * 3600.0


@dataclass(frozen=True, slots=True)
class EventsParams:
    """The events of the last `since_s` seconds, the newest `limit` of them."""

    since_s: float = DEFAULT_SINCE_S
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One thing that happened: a job started or ended, an alert, a budget, a guard stop."""

    ts: float
    kind: str
    """job_started, job_exited, job_stopped, job_failed, alert_raised, alert_cleared,
    budget_reached, guard_stop, server_up, server_down, deploy, rollback or agent_started."""
    subject: str
    severity: str
    message: str
    asked_by: str | None = None
    """Who asked for it (a console, or the budget guard), where someone did."""


@dataclass(frozen=True, slots=True)
class EventsList:
    """Events, oldest first."""

    events: tuple[TimelineEvent, ...]
