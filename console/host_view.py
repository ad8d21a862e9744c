"""What the console holds per host: the link's state, the last snapshot and when it came.

No Textual: the app keeps one per host and hands it to the screens.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

from agent.protocol import Alert, Snapshot
from console.hosts import LinkState
from console.safe_text import sanitise

THROUGHPUT_POINTS = 120


@dataclass
class HostView:
    """One host as the console knows it now."""

    name: str
    state: LinkState
    snapshot: Snapshot | None = None
    received_at: float | None = None
    throughput: collections.deque[float] = field(
        default_factory=lambda: collections.deque(maxlen=THROUGHPUT_POINTS)
    )

    def take(self, snapshot: Snapshot, now: float | None = None) -> None:
        """Keep a new snapshot (received at `now`) and extend the throughput history."""
        self.snapshot = snapshot
        self.received_at = time.time() if now is None else now
        server = snapshot.server
        rate = server.gen_throughput_tokens_per_s if server else None
        if rate is None:
            rate = sum(d.tokens_per_s or 0.0 for d in snapshot.datasets)
        self.throughput.append(rate)

    def age_s(self, now: float | None = None) -> float | None:
        """Seconds since the last snapshot arrived."""
        if self.received_at is None:
            return None
        return (time.time() if now is None else now) - self.received_at


def new_alerts(before: Snapshot | None, after: Snapshot) -> list[Alert]:
    """Alerts in `after` that `before` did not have (by kind and subject): the ones to toast."""
    seen = {(a.kind, a.subject) for a in before.alerts} if before is not None else set()
    return [a for a in after.alerts if (a.kind, a.subject) not in seen]


def headline(view: HostView) -> str:
    """One line per host for the host strip: link, datasets running, alerts."""
    snapshot, name = view.snapshot, sanitise(view.name)
    if snapshot is None:
        return f"{name}: {view.state.status}"
    running = sum(1 for d in snapshot.datasets if d.status == "running")
    errors = sum(1 for a in snapshot.alerts if a.severity == "error")
    return f"{name}: {view.state.status}, {running} running, {len(snapshot.alerts)} alerts ({errors} errors)"
