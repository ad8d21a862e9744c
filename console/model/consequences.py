"""What a destructive action will do, in words, for the modal that asks before it is done.

A modal states the job's real state: a job that has already ended is not offered a stop, and
the signals a stop sends are named as the job's spec sets them.
"""

from __future__ import annotations

import time

from agent.protocol import LIVE_JOB_STATES, JobInfo, JobSpec, Snapshot, StopResult
from console.model.formatting import exit_reason

EXTERNAL_STOP = JobSpec((), stop_signal="SIGTERM", grace_s=30.0)
"""How the agent stops a process it did not start (its EXTERNAL_PLAN)."""


def clock(at: float | None) -> str:
    """HH:MM of an epoch time (the workstation's zone), or "an unknown time"."""
    return time.strftime("%H:%M", time.localtime(at)) if at is not None else "an unknown time"


def signals_text(spec: JobSpec | None) -> str:
    """The stop's signals in order: "SIGINT, then SIGTERM after 60 s, then SIGKILL after 10 s"."""
    if spec is not None and spec.stop_signal == "SIGKILL":
        return "SIGKILL"
    if spec is None:
        return "its stop signal, then SIGTERM and SIGKILL if it does not exit within its grace"
    first = spec.stop_signal
    term = "" if first == "SIGTERM" else f", then SIGTERM after {spec.grace_s:g} s"
    kill_after = spec.term_grace_s if term else spec.grace_s
    return f"{first}{term}, then SIGKILL after {kill_after:g} s"


def ended_text(job: JobInfo) -> str:
    """How a job that is no longer live ended, and when: "exited with code 3 at 14:02".

    A failed job's reason follows, where it left one.
    """
    if job.state == "stopped":
        how = "was stopped"
    elif job.exit_signal:
        how = f"was killed by {job.exit_signal}"
    elif job.exit_code is not None:
        how = f"exited with code {job.exit_code}"
    else:
        how = f"ended ({job.state})"
    why = f": {exit_reason(job)}" if job.exit_reason else ""
    return f"{how} at {clock(job.ended_at)}{why}"


def nothing_to_stop(job: JobInfo) -> str | None:
    """Why `job` cannot be stopped (it has ended), or None while it is live."""
    if job.state in LIVE_JOB_STATES:
        return None
    return f"{job.name}: nothing to stop; it {ended_text(job)}"


def stop_consequences(
    host: str, snapshot: Snapshot, job_id: str, spec: JobSpec | None = None
) -> str:
    """What stopping `job_id` on `host` does: its signals by name, and what its dataset keeps."""
    job = next(job for job in snapshot.jobs if job.id == job_id)
    ended = nothing_to_stop(job)
    if ended is not None:
        return ended
    signals = signals_text(EXTERNAL_STOP if job.external else spec)
    lines = [f"{host}: {job.name} is {job.state} (pid {job.pid}, process group {job.pgid}). "
             f"Its process group will get {signals} if it has not exited by then."]  # fmt: skip
    dataset = next((d for d in snapshot.datasets if d.name == job.dataset), None)
    if dataset is not None:
        lines.append(
            f"{dataset.name}: {dataset.responses:,} responses, {dataset.tokens:,} tokens of "
            f"{dataset.budget or 0:,}; {dataset.in_flight} request(s) in flight will be drained, "
            "or lost if it has to be killed. A restart resumes from the responses on disk."
        )
    return "\n".join(lines)


def stop_steps(result: StopResult) -> str:
    """`SIGINT → SIGTERM`: the signals a stop sent, or that the job had already exited."""
    return " → ".join(step.action for step in result.steps) or "it had exited"
