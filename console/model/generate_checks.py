"""Why generation should not start on a dataset now: `g`, `G` and `start NAME/DATASET` ask alike."""

from __future__ import annotations

from agent.protocol import LIVE_JOB_STATES, DatasetProgress, JobInfo


def why_not_generate(dataset: DatasetProgress, jobs: tuple[JobInfo, ...]) -> str | None:
    """The reason not to start a run on `dataset`, or None when one should start."""
    writers = [j for j in jobs if j.dataset == dataset.name and j.state in LIVE_JOB_STATES]
    if writers:
        return f"{dataset.name} is being written by {writers[0].name} (pid {writers[0].pid}); R restarts it"
    if dataset.writer:  # a lock holder or an old script with the file open: one writer only
        return f"{dataset.name} is being written by {dataset.writer}"
    if dataset.writer_active:
        return f"{dataset.name} is being written by a runner the agent did not start (its runner.json is live)"
    if dataset.prompts == 0 and dataset.responses == 0:
        return (
            f"{dataset.name} has no prompts: its prompts file is missing or empty (see the alert)"
        )
    if dataset.generation_done:
        return f"{dataset.name} is done: {done_why(dataset)}"
    return None


def done_why(dataset: DatasetProgress) -> str:
    """Why the one budget rule calls `dataset` done, in words."""
    if dataset.budget is not None and dataset.tokens >= dataset.budget:
        return f"{dataset.tokens:,} of its {dataset.budget:,} tokens"
    failed = f", {dataset.failed_prompts:,} failed for good" if dataset.failed_prompts else ""
    return f"no prompt left ({dataset.responses:,} answered{failed})"
