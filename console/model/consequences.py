"""What a destructive action will do, in words, for the modal that asks before it is done."""

from __future__ import annotations

from agent.protocol import Snapshot


def stop_consequences(host: str, snapshot: Snapshot, job_id: str) -> str:
    """What stopping `job_id` on `host` does: its signals, and what its dataset loses or keeps."""
    job = next(job for job in snapshot.jobs if job.id == job_id)
    lines = [f"{host}: {job.name} (pid {job.pid}, process group {job.pgid}) will get its stop "
             "signal, then SIGTERM and SIGKILL if it does not exit within its grace."]  # fmt: skip
    dataset = next((d for d in snapshot.datasets if d.name == job.dataset), None)
    if dataset is not None:
        lines.append(
            f"{dataset.name}: {dataset.responses:,} responses, {dataset.tokens:,} tokens of "
            f"{dataset.budget or 0:,}; {dataset.in_flight} request(s) in flight will be drained, "
            "or lost if it has to be killed. A restart resumes from the responses on disk."
        )
    return "\n".join(lines)
