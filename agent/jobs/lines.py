"""A job's line: its name and dataset, and the newest of the agent's own jobs in each.

That newest job is the one that counts for the restart policy, the autopilot, and a launch that
a restart must not double.
"""

from __future__ import annotations

from agent.protocol import JobInfo


def latest_per_line(jobs: tuple[JobInfo, ...]) -> list[JobInfo]:
    """The newest of the agent's own jobs for each (name, dataset)."""
    latest: dict[tuple[str, str | None], JobInfo] = {}
    for job in jobs:
        key = (job.name, job.dataset)
        if not job.external and (key not in latest or _newer(job, latest[key])):
            latest[key] = job
    return list(latest.values())


def _newer(job: JobInfo, other: JobInfo) -> bool:
    return (job.started_at or 0.0, job.id) > (other.started_at or 0.0, other.id)
