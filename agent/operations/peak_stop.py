"""`stop_after_peak_evals`: a training run ended once its acceptance has peaked.

Acceptance can peak around epoch 4.6 of 10 and fall from there while the loss still drops
(deepseek-ai/DeepSpec #84): the GPU-hours after the peak buy a worse drafter. A train job whose
config sets `stop_after_peak_evals = N` is stopped with its own stop signal once N evaluations in
a row fell below its best (probes/training/log.py's count), once; the trainer's checkpoints stay,
the best among them named in the training panel, and the autopilot takes training as done
(stages.py) and serves that checkpoint where the drafter server's argv says `{best_checkpoint}`.
"""

from __future__ import annotations

from agent.operations.announce import Announcer
from agent.operations.box import Box
from agent.operations.stop_once import StopOnce
from agent.protocol import JobInfo, JobSpec, Snapshot, TrainingProgress
from agent.tasks import TaskOwner


class PeakStop:
    """Stops each training job whose acceptance has fallen past its configured count, once."""

    def __init__(self, box: Box, announcer: Announcer, tasks: TaskOwner) -> None:
        self.box = box
        self.stops = StopOnce(box, announcer, tasks, "training_peak_stop")

    async def heard(self, snapshot: Snapshot) -> None:
        """Stop what has passed its peak (an observer listener; never waits)."""
        jobs = {job.id: job for job in snapshot.jobs}
        for run in snapshot.training:
            job = jobs.get(run.job_id)
            if job is not None and self.past_peak(job, run):
                self.stops.stop(job, _why(run))

    def past_peak(self, job: JobInfo, run: TrainingProgress) -> bool:
        """True for a running train job of ours that has passed its configured count."""
        mine = job.kind == "train" and job.state == "running" and not job.external
        return mine and peak_passed(self.box.pipeline.jobs.get(job.name), run)


def peak_passed(spec: JobSpec | None, run: TrainingProgress) -> bool:
    """True when the run has had its `stop_after_peak_evals` evaluations below its best."""
    wanted = spec.stop_after_peak_evals if spec is not None else None
    return wanted is not None and run.evals_since_best >= wanted


def _why(run: TrainingProgress) -> str:
    kept = run.best_checkpoint or f"the checkpoint of step {run.best_eval_step}"
    return (
        f"{run.evals_since_best} evaluations in a row below its best "
        f"({run.best_eval_acceptance or 0:.2f} at step {run.best_eval_step}): stopped after its "
        f"peak (stop_after_peak_evals); serve {kept}"
    )
