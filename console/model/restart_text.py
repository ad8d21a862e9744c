"""A job's restart policy in a word or two, for the jobs table (the whole note is in events).

No Textual here.
"""

from __future__ import annotations

from agent.protocol import LIVE_JOB_STATES, JobInfo

BADGES = (
    ("restarting", "restarting"),
    ("waiting for the GPUs", "waits for GPUs"),
    ("waiting for", "waits for disk"),
    ("gave up", "gave up"),
    ("restarted as", "restarted"),
)
"""How a restart note begins, and its badge."""


def restart_badge(job: JobInfo) -> str:
    """A word or two: restarting, gave up, restart 2; empty when there is nothing to say."""
    if job.state in LIVE_JOB_STATES:
        return f"restart {job.restarts}" if job.restarts else ""
    note = job.restart_note or ""
    return next((badge for start, badge in BADGES if note.startswith(start)), "")
