"""One training job's progress for the snapshot, from its log and its configuration.

The log's figures, the total from the log or the run's configuration, and the time left at the
pace the run has kept. The pace is measured on the agent's clock where it can be (it counts evaluations, checkpoints
and stalls, which a trainer's own per-step time leaves out), else taken from the trainer's own
figure. Pure: no file, no clock of its own.
"""

from __future__ import annotations

from collections import deque

from agent.probes.training.command import ConfiguredRun
from agent.probes.training.figures import Figures
from agent.probes.training.log import TrainingState
from agent.protocol.snapshot import TrainingEval, TrainingProgress

PACE_WINDOW_S = 900.0
FROM_THE_LOG = "the trainer's log"
NO_TOTAL = "neither its log nor a configuration read here gives one"


class StepPace:
    """The steps a run has made against the agent's clock, over the last PACE_WINDOW_S."""

    def __init__(self) -> None:
        self._seen: deque[tuple[float, int]] = deque(maxlen=64)

    def note(self, now: float, step: int | None) -> None:
        """The step the log says at `now` (only once the log has been read up to its end)."""
        if step is None:
            return
        if self._seen and step < self._seen[-1][1]:  # a restart from a checkpoint
            self._seen.clear()
        if not self._seen or step != self._seen[-1][1]:
            self._seen.append((now, step))
        while len(self._seen) > 2 and now - self._seen[1][0] > PACE_WINDOW_S:
            self._seen.popleft()

    @property
    def seconds_per_step(self) -> float | None:
        """Seconds a step over the window; None until two different steps were seen."""
        if len(self._seen) < 2:
            return None
        (start, first), (end, last) = self._seen[0], self._seen[-1]
        return (end - start) / (last - first) if end > start else None


def progress_of(
    job_id: str,
    state: TrainingState,
    configured: ConfiguredRun,
    measured: float | None,
    *,
    running: bool = True,
) -> TrainingProgress:
    """The snapshot's view of one job: `measured` is its pace on the agent's clock, if known.

    A job no longer `running` has no time left to wait for, short of its total or not.
    """
    total, note = _total(state, configured)
    pace = measured if measured is not None else state.seconds_per_step
    if not running:
        pace = None
    train = state.train
    return TrainingProgress(
        job_id, state.step, total, state.epoch or _epoch(state.step, configured), train.loss,
        state.learning_rate, train.mean_acceptance_rate, train.acceptance_length,
        state.best_eval_acceptance, state.best_eval_step, _eta(state, total, pace),
        tuple(train.loss_history), tuple(train.acceptance_history),
        state.epochs or configured.epochs, train.accuracy, _evaluation(state.eval), note, pace,
        train.loss_not_finite, train.zero_records, state.evals_since_best,
    )  # fmt: skip


def _total(state: TrainingState, configured: ConfiguredRun) -> tuple[int | None, str]:
    """The smaller of the log's total and the configured one (`max_steps` caps the epochs)."""
    from_log = state.total_steps
    epochs = state.epochs or configured.epochs
    if from_log is None and state.steps_per_epoch and epochs:
        from_log = state.steps_per_epoch * epochs
    known = [
        (t, n)
        for t, n in ((from_log, FROM_THE_LOG), (configured.total_steps, configured.note))
        if t
    ]
    if not known:
        return None, configured.note or NO_TOTAL
    return min(known, key=lambda item: item[0])


def _epoch(step: int | None, configured: ConfiguredRun) -> int | None:
    """The epoch a step falls in, when the configuration says how long an epoch is."""
    per_epoch, epochs = configured.steps_per_epoch, configured.epochs
    if step is None or not per_epoch or not epochs:
        return None
    return min(epochs, max(0, step - 1) // per_epoch + 1)


def _eta(state: TrainingState, total: int | None, pace: float | None) -> float | None:
    """Time left at `pace`: none to wait for at the total, unknown without a pace."""
    if total is None or state.step is None:
        return None
    left = max(0, total - state.step)
    if left == 0:
        return 0.0
    return None if pace is None else pace * left


def _evaluation(figures: Figures) -> TrainingEval | None:
    """The latest evaluation, once there has been one."""
    if figures.step is None:
        return None
    return TrainingEval(
        figures.step, figures.loss, figures.accuracy, figures.acceptance_length,
        figures.mean_acceptance_rate, tuple(figures.loss_history), tuple(figures.acceptance_history),
    )  # fmt: skip
