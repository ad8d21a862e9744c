"""What happened on a host while this console was away, in one line.

Pure: no I/O and no Textual. A console that reconnects asks the agent for the events since it
last saw the host and shows this summary once: budgets reached, jobs that exited, alerts
raised, guard stops. Routine events (a job started, an alert cleared) are left to the events
screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.protocol import TimelineEvent

SUMMARISED = (
    ("budget_reached", "budget reached", "budgets reached"),
    ("job_ended", "job exited", "jobs exited"),
    ("alert_raised", "alert raised", "alerts raised"),
    ("guard_stop", "guard stop", "guard stops"),
)
"""(group, singular, plural), in the order the summary lists them."""
JOB_ENDS = frozenset({"job_exited", "job_stopped", "job_failed"})


def group_of(kind: str) -> str:
    """The summary's group for an event kind: every way a job ends counts as one."""
    return "job_ended" if kind in JOB_ENDS else kind


def away_summary(events: Sequence[TimelineEvent], since: float) -> str | None:
    """`while you were away: 1 budget reached, 2 jobs exited`, or None when nothing counted."""
    counts: dict[str, int] = {}
    for event in events:
        if event.ts > since:
            group = group_of(event.kind)
            counts[group] = counts.get(group, 0) + 1
    parts = [
        f"{counts[group]} {one if counts[group] == 1 else many}"
        for group, one, many in SUMMARISED
        if counts.get(group)
    ]
    return "while you were away: " + ", ".join(parts) if parts else None
