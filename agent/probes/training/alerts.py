"""Training that lies, said as alerts: a diverged loss, figures stuck at zero, a peak passed.

What users of SpecForge and speculators lose runs to: a loss that turned NaN while the run went on
for hours; "loss and acc keep 0" (SpecForge #392: a broken loss mask or data, nothing learnt);
acceptance that peaked around epoch 4.6 of 10, the final checkpoint 5-8 % worse than the best
(deepseek-ai/DeepSpec #84). Each is an alert on the training job, so it reaches the timeline, the
toasts and the webhook as every alert does, and clears when the log says otherwise. Pure.
"""

from __future__ import annotations

from agent.protocol import Alert, TrainingProgress

STUCK_RECORDS = 10
"""Logged training records in a row with a loss or accuracy of exactly 0 before it alerts."""
PEAK_EVALS = 3
"""Evaluations since the best, none better, before the peak is said to have passed."""


def training_alerts(runs: tuple[TrainingProgress, ...], now: float) -> list[Alert]:
    """The alerts each training job's progress calls for."""
    alerts = []
    for run in runs:
        at = f" at step {run.step:,}" if run.step is not None else ""
        if run.loss_not_finite:
            alerts.append(Alert("training_diverged", "error", (
                f"training {run.job_id}: the loss is NaN or infinite{at}: the run has diverged "
                "and learns nothing from here; stop it, and resume from a checkpoint before it "
                "with a lower learning rate"
            ), run.job_id, now))  # fmt: skip
        if run.zero_records >= STUCK_RECORDS:
            alerts.append(Alert("training_stuck", "error", (
                f"training {run.job_id}: loss or accuracy exactly 0 for {run.zero_records} "
                f"logged steps{at}: nothing is learnt (a loss mask with no token, or data the "
                "trainer cannot read); check the export's round trip and the trainer's data path"
            ), run.job_id, now))  # fmt: skip
        if run.evals_since_best >= PEAK_EVALS and run.best_eval_step is not None:
            keep = run.best_checkpoint or f"the checkpoint of step {run.best_eval_step:,}"
            alerts.append(Alert("training_peak_passed", "warning", (
                f"training {run.job_id}: acceptance has not beaten its best "
                f"({run.best_eval_acceptance or 0:.2f} at step {run.best_eval_step:,}) in "
                f"{run.evals_since_best} evaluations: the peak has likely passed; serve {keep}, "
                "not the last"
            ), run.job_id, now))  # fmt: skip
    return alerts
