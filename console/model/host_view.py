"""What the console holds per host: the link's state, the last snapshot and when it came.

No Textual: the app keeps one per host and hands it to the screens.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field

from agent.protocol import Alert, JobInfo, JobState, Snapshot
from console.link.host_connection import LinkState
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

    def record_snapshot(self, snapshot: Snapshot, now: float | None = None) -> None:
        """Keep a new snapshot (received at monotonic time `now`) and extend the throughput."""
        self.snapshot = snapshot
        self.received_at = self.monotonic() if now is None else now
        server = snapshot.server
        rate = server.gen_throughput_tokens_per_s if server else None
        if rate is None:
            rate = sum(d.tokens_per_s or 0.0 for d in snapshot.datasets)
        self.throughput.append(rate)

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
    if state in ("starting", "running", "stopping"):
        return "stopping"
    return "stopped" if state in ("failed", "exited", "killed") else state


def headline(view: HostView) -> str:
    """One line per host for the host strip: link, datasets running, alerts."""
    snapshot, name = view.snapshot, sanitise(view.name)
    if snapshot is None:
        return f"{name}: {view.state.status}"
    running = sum(1 for d in snapshot.datasets if d.status == "running")
    errors = sum(1 for a in snapshot.alerts if a.severity == "error")
    return f"{name}: {view.state.status}, {running} running, {len(snapshot.alerts)} alerts ({errors} errors)"
