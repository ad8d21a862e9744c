"""`stop_after_peak_evals`: a training run ended once its acceptance has peaked (#38).

Acceptance can peak around epoch 4.6 of 10 and fall from there while the loss still drops
(deepseek-ai/DeepSpec #84): the GPU-hours after the peak buy a worse drafter. A train job whose
config sets `stop_after_peak_evals = N` is stopped with its own stop signal once N evaluations in
a row fell below its best (training_log's count), once; the trainer's checkpoints stay, the best
among them named in the training panel, and the autopilot takes training as done
(stages.py) and serves that checkpoint where the drafter server's argv says `{best_checkpoint}`.
A stop asked for is never undone by a restart policy.
"""

from __future__ import annotations

import logging

from agent.errors import AgentError
from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.protocol import JobInfo, Snapshot, TrainingProgress
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)


class PeakStop:
    """Stops each training job whose acceptance has fallen past its configured count, once."""

    def __init__(self, box: Box, announcer: Announcer, tasks: TaskOwner) -> None:
        self.box = box
        self.announcer = announcer
        self.tasks = tasks
        self._stopped: set[str] = set()

    async def heard(self, snapshot: Snapshot) -> None:
        """Stop what has passed its peak (an observer listener; never waits)."""
        jobs = {job.id: job for job in snapshot.jobs}
        for run in snapshot.training:
            job = jobs.get(run.job_id)
            if job is not None and run.job_id not in self._stopped and self.past_peak(job, run):
                self._stopped.add(run.job_id)
                _ = self.tasks.spawn(self._stop(job, run), f"peak stop {job.id}")

    def past_peak(self, job: JobInfo, run: TrainingProgress) -> bool:
        """True for a running train job of ours that has passed its configured count."""
        spec = self.box.pipeline.jobs.get(job.name)
        wanted = spec.stop_after_peak_evals if spec is not None else None
        return (
            wanted is not None and job.kind == "train" and job.state == "running"
            and not job.external and run.evals_since_best >= wanted
        )  # fmt: skip

    async def _stop(self, job: JobInfo, run: TrainingProgress) -> None:
        kept = run.best_checkpoint or f"the checkpoint of step {run.best_eval_step}"
        why = (
            f"{run.evals_since_best} evaluations in a row below its best "
            f"({run.best_eval_acceptance or 0:.2f} at step {run.best_eval_step}): stopped after "
            f"its peak (stop_after_peak_evals); serve {kept}"
        )
        try:
            result = await self.box.stop(job.id)
        except AgentError as exc:
            log.warning("peak stop of %s failed: %s", job.id, exc.message)
            self.announcer.event("training_peak_stop", job.id, f"{job.name}: {why}; the stop "
                                 f"failed: {exc.message}", "error")  # fmt: skip
            return
        self.announcer.event(
            "training_peak_stop", job.id, f"{job.name}: {why} ({result.outcome})", "warning"
        )
