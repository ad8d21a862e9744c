"""What a redeploy states before it acts: the `R` modal's text, and headless `redeploy`'s refusal.

The job, its stop plan and the files to deploy are fixed when `R` is pressed; the numbers (the
dataset's responses and tokens, the projection, the budget advice) come from the latest snapshot,
the one the dashboard and the toasts show, so the modal never freezes at the moment it opened.
A dataset whose run has ended gets one line saying so, not a redeploy. No Textual here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agent.protocol import LIVE_JOB_STATES, JobInfo, JobSpec, Snapshot
from console.model.budget_advice import BudgetAdvice, budget_advice
from console.model.consequences import ended_text, stop_consequences


@dataclass(frozen=True, slots=True)
class RedeployFacts:
    """One job's redeploy as it would go now: `snapshot` is the latest of its host."""

    host: str
    job: JobInfo
    spec: JobSpec | None
    files: tuple[str, ...]
    """One line per file that will be deployed: "changed: /remote/path"."""
    snapshot: Snapshot | None = None

    @property
    def title(self) -> str:
        """The modal's question."""
        return f"Kill, deploy and restart {self.job.name}?"

    @property
    def current_job(self) -> JobInfo:
        """The job as the latest snapshot has it (as it was at `R` if the snapshot lacks it)."""
        jobs = self.snapshot.jobs if self.snapshot is not None else ()
        return next((job for job in jobs if job.id == self.job.id), self.job)

    def seen(self, snapshot: Snapshot) -> RedeployFacts:
        """The same redeploy, with the numbers of `snapshot`."""
        return dataclasses.replace(self, snapshot=snapshot)

    def advice(self) -> BudgetAdvice | None:
        """The budget advice as of the latest snapshot."""
        return budget_advice(self.current_job, self.snapshot)

    def text(self) -> str:
        """The files, the budget advice, then the stop and what the dataset keeps.

        What the modal decides first: at 80×24 its suggestion was cut mid-sentence and the files
        below it were out of view, under the stop's signals.
        """
        lines = ["Files that will be deployed (ctrl+d: diff):"]
        lines += [f"  {line}" for line in self.files] or ["  (no file differs)"]
        advice = self.advice()
        if advice is not None:
            lines += [advice.suggestion(), advice.projection()]
        return "\n".join([*lines, self._stop_text()])

    def _stop_text(self) -> str:
        snapshot, job = self.snapshot, self.current_job
        if snapshot is None:
            return f"{self.host}: {job.name} is {job.state} (pid {job.pid})."
        if all(listed.id != job.id for listed in snapshot.jobs):  # gone from the listing since R
            snapshot = dataclasses.replace(snapshot, jobs=(*snapshot.jobs, job))
        return stop_consequences(self.host, snapshot, job.id, self.spec)


def ended_run_line(host: str, snapshot: Snapshot, dataset: str) -> str | None:
    """One line for `redeploy HOST DATASET` when no run of the agent's writes DATASET now.

    How its latest run ended, when, and the commands that start it again; None when `dataset`
    names a job rather than a dataset, names nothing known, or a run of it is live.
    """
    own = [job for job in snapshot.jobs if not job.external]
    if any(dataset in (job.id, job.name) for job in own):
        return None
    runs = [job for job in own if job.dataset == dataset]
    known = runs or any(d.name == dataset for d in snapshot.datasets)
    if not known or any(job.state in LIVE_JOB_STATES for job in runs):
        return None
    if not runs:
        return (
            f"{dataset}: no run of the agent's writes it and none is on record: nothing to "
            f"redeploy. To start one: eagle-console start {host} JOB/{dataset}"
        )
    latest = max(runs, key=lambda job: (job.started_at or 0.0, job.id))
    line = f"{latest.name}/{dataset}"
    return (
        f"{dataset}: its run {latest.id} {ended_text(latest)}{_budget_met(snapshot, latest)}; "
        f"nothing runs there to redeploy. To start it again: eagle-console start {host} {line} "
        f"(or eagle-console redeploy {host} {line} to deploy the new code first)"
    )


def _budget_met(snapshot: Snapshot, job: JobInfo) -> str:
    """The words after a clean exit at the budget: ", its budget met (54,678 of 50,000 tokens)"."""
    progress = next((d for d in snapshot.datasets if d.name == job.dataset), None)
    if job.exit_code != 0 or progress is None or progress.budget is None:
        return ""
    if progress.tokens < progress.budget:
        return ""
    return f", its budget met ({progress.tokens:,} of {progress.budget:,} tokens)"
