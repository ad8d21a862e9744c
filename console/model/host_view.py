"""What the console holds per host: the link's state, the last snapshot and when it came.

No Textual: the app keeps one per host and hands it to the screens.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field

from agent.protocol import LIVE_JOB_STATES, Alert, JobInfo, JobState, Snapshot
from console.link.host_connection import LinkState
from console.model.formatting import live_rate, server_rate
from console.model.link_text import link_text
from console.model.operations_view import OperationsSeen
from console.model.safe_text import sanitise

THROUGHPUT_POINTS = 120


@dataclass
class HostView:
    """One host as the console knows it now.

    Ages run on the monotonic clock (`monotonic`), so a step of the workstation's wall clock
    neither marks live data stale nor stale data live; times the agent stamped are compared with
    the agent's own clock (`agent_now`), never with the workstation's.
    """

    name: str
    state: LinkState
    snapshot: Snapshot | None = None
    received_at: float | None = None
    """When the snapshot came, on the `monotonic` clock."""
    throughput: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=THROUGHPUT_POINTS)
    )
    monotonic: Callable[[], float] = field(default=time.monotonic, repr=False)
    stops_asked: set[str] = field(default_factory=set)
    """Ids of the jobs the user asked to stop: their end is a stop, not a failure."""
    last_failure: LinkState | None = None
    """The link's last down or refused state since it was last up: why it is not up now."""
    awaiting_pid: set[str] = field(default_factory=set)
    """Ids of jobs launched here whose pid the launch could not tell yet."""
    operations_seen: OperationsSeen = field(default_factory=OperationsSeen)
    """The agent's operations on this host, as far as they were told."""

    def launched(self, job: JobInfo) -> None:
        """A job the user launched: if it has no pid yet, tell it once a snapshot has one."""
        if job.pid is None:
            self.awaiting_pid.add(job.id)

    def pids_found(self, snapshot: Snapshot) -> list[JobInfo]:
        """The jobs awaiting a pid that `snapshot` shows with one (each is told only once)."""
        found = [j for j in snapshot.jobs if j.id in self.awaiting_pid and j.pid is not None]
        self.awaiting_pid -= {job.id for job in found}
        return found

    def link_changed(self, state: LinkState) -> None:
        """Take the link's new state, keeping why it last failed until it is up again."""
        self.state = state
        if state.status in ("down", "refused"):
            self.last_failure = state
        elif state.status == "up":
            self.last_failure = None

    def record_snapshot(self, snapshot: Snapshot, now: float | None = None) -> None:
        """Keep a new snapshot (received at monotonic time `now`) and extend the throughput."""
        self.snapshot = snapshot
        self.received_at = self.monotonic() if now is None else now
        self.throughput.append(throughput_now(snapshot))

    def age_s(self) -> float | None:
        """Seconds since the last snapshot arrived."""
        if self.received_at is None:
            return None
        return max(0.0, self.monotonic() - self.received_at)

    def agent_now(self) -> float | None:
        """The agent's clock now, estimated: its snapshot's time plus the snapshot's age."""
        age = self.age_s()
        return (
            self.snapshot.taken_at + age if self.snapshot is not None and age is not None else None
        )


def throughput_now(snapshot: Snapshot) -> float:
    """Tokens per second generated now: the live server's, else the live writers' sum.

    0 when neither is alive: a finished run or a down server adds nothing to the sparkline.
    """
    rate = server_rate(snapshot.server)
    if rate is None:
        rate = sum(live_rate(d, snapshot.taken_at) or 0.0 for d in snapshot.datasets)
    return rate


def new_alerts(
    before: Snapshot | None, after: Snapshot, stops_asked: Set[str] = frozenset()
) -> list[Alert]:
    """Alerts in `after` that `before` did not have (by kind and subject): the ones to toast.

    A job the user asked to stop that exits with a code on its signal has not failed: no toast.
    """
    seen = {(a.kind, a.subject) for a in before.alerts} if before is not None else set()
    return [
        a
        for a in after.alerts
        if (a.kind, a.subject) not in seen
        and not (a.kind == "job_failed" and a.subject in stops_asked)
    ]


def as_asked(jobs: tuple[JobInfo, ...], stops_asked: Set[str]) -> tuple[JobInfo, ...]:
    """`jobs` with the ones the user asked to stop shown as stopping, then stopped."""
    return tuple(
        dataclasses.replace(job, state=_asked_state(job.state)) if job.id in stops_asked else job
        for job in jobs
    )


def _asked_state(state: JobState) -> JobState:
    if state in LIVE_JOB_STATES:
        return "stopping"
    return "stopped" if state in ("failed", "exited", "killed") else state


def headline(view: HostView, now: float) -> str:
    """One line per host for the host strip: link (with why it is down), datasets running, alerts."""
    snapshot, name = view.snapshot, sanitise(view.name)
    link = sanitise(link_text(view.state, view.last_failure, now))
    if snapshot is None:
        return f"{name}: link {link}, no data yet"
    running = sum(1 for d in snapshot.datasets if d.status == "running")
    errors = sum(1 for a in snapshot.alerts if a.severity == "error")
    return (
        f"{name}: link {link}, {running} running, {len(snapshot.alerts)} alerts ({errors} errors)"
    )


def no_data_text(view: HostView, now: float) -> str:
    """What every panel of a host with no snapshot yet says: whose data is missing, and why."""
    name = sanitise(view.name)
    if view.state.status == "up":
        return f"no data from {name} yet: its first snapshot is on its way"
    return (
        f"no data from {name} yet: link {sanitise(link_text(view.state, view.last_failure, now))}"
    )
