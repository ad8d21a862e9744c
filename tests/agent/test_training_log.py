"""Training progress from older trainers' lines, the stand-in trainer's, and plain tqdm bars.

SpecForge 0.2.0's and speculators 0.9.0's lines, printed by their own code, are in
test_training_trainers.py; the samples here are written from the older formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.probes.training.command import ConfiguredRun
from agent.probes.training.log import TrainingLogParser, TrainingState
from agent.probes.training.progress import progress_of
from agent.protocol import (
    JOBS_LAUNCH,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
)
from tests.support.operations import local_link, snapshot_where

SPECFORGE_OLD = (
    "Starting training from epoch:0 step:0\n"
    "Training Epoch 2:  41%|████      | 820/2000 [10:15<14:45,  1.33it/s, loss=2.314, acc=0.612, acceptance_rate=0.55, time=0.75s]\r"
    "Training Epoch 2:  42%|████▏     | 840/2000 [10:30<14:30,  1.33it/s, loss=2.301, acc=0.615, acceptance_rate=0.56, time=0.75s]\n"
    "Eval - Step 840 [2/10], position 0,  Acc: 0.74\n"
    "Eval - Step 840 [2/10], position 1,  Acc: 0.60\n"
    "Eval - Step 840 [2/10], position 2,  Acc: 0.50\n"
    "Eval - Step 840 [2/10], position 0,  Acceptance Rate: 0.7400\n"
    "Eval - Step 840 [2/10], position 0, pLoss: 1.2001\n"
)
SPECULATORS_DICTS = (
    "{'train': {'loss': 2.5, 'loss_0': 1.5, 'loss_1': 1.0, 'full_acc_0': 0.71, 'full_acc_1': 0.42, "
    "'cond_acc_1': 0.59}, 'epoch': 3, 'lr': 5e-05, 'global_step': 4400}\n"
    "{'val': {'loss_epoch': 2.3, 'full_acc_0_epoch': 0.73, 'full_acc_1_epoch': 0.45}, 'epoch': 3}\n"
)


def eta_of(state: TrainingState) -> float | None:
    """The time left the snapshot would carry, with no configuration and no measured pace."""
    return progress_of("t-1", state, ConfiguredRun(), None).eta_s


def test_specforge_older_tqdm_and_eval_lines() -> None:
    parser = TrainingLogParser()
    parser.feed(SPECFORGE_OLD)
    state = parser.state
    # The bar counts within its epoch (2000 a epoch); the eval line says epoch 2 of 10: overall.
    assert (state.step, state.total_steps, state.epoch, state.epochs) == (840, 20000, 2, 10)
    per_step = (14 * 60 + 30) / (2000 - 840)  # the bar's time left is its epoch's
    assert state.seconds_per_step == pytest.approx(per_step)
    assert eta_of(state) == pytest.approx(per_step * (20000 - 840))
    # The bar's postfix is training; the Eval lines are the evaluation, kept apart.
    assert state.train.loss == pytest.approx(2.301)
    assert state.train.accuracy == pytest.approx(0.615)
    assert state.train.mean_acceptance_rate == pytest.approx(0.56)
    assert state.train.acceptance_length is None
    assert state.eval.accuracy_by_position == {0: 0.74, 1: 0.60, 2: 0.50}
    length = 1 + 0.74 + 0.74 * 0.60 + 0.74 * 0.60 * 0.50
    assert state.eval.acceptance_length == pytest.approx(length)
    assert state.eval.mean_acceptance_rate == pytest.approx(0.74)
    assert (state.eval.step, state.best_eval_step) == (840, 840)


def simulator_lines(steps: int, epochs: int) -> str:
    """What `agent.simulator.train` prints: a bar per epoch (epochs from 0), evals after each."""
    per_epoch, lines = steps // epochs, []
    for step in range(1, steps + 1):
        epoch, done = (step - 1) // per_epoch, (step - 1) % per_epoch + 1
        lines.append(
            f"\rTraining Epoch {epoch}: {100 * done // per_epoch:3d}%|##| {done}/{per_epoch} "
            f"[00:00<00:{per_epoch - done:02d},  1.00it/s, loss=1.0]"
        )
        if done == per_epoch:
            lines.append(f"\nEval - Step {step} [{epoch + 1}/{epochs}], position 0,  Acc: 0.70\n")
    return "".join(lines)


def test_steps_and_totals_count_over_the_whole_run_not_within_an_epoch() -> None:
    """Once read as "step 600/300 · epoch 2": the overall step over one epoch's total."""
    parser = TrainingLogParser()
    parser.feed(simulator_lines(600, 2))
    state = parser.state
    assert (state.step, state.total_steps, state.epoch, state.epochs) == (600, 600, 2, 2)
    assert eta_of(state) == 0


def test_within_the_second_epoch_the_step_counts_on_from_the_first() -> None:
    parser = TrainingLogParser()
    text = simulator_lines(600, 2)
    second = text.index("Training Epoch 1: ")
    parser.feed(text[: text.index("\r", text.index("| 150/300", second))])
    state = parser.state
    assert (state.step, state.total_steps, state.epoch, state.epochs) == (450, 600, 2, 2)
    assert eta_of(state) == pytest.approx(150)  # one second a step, for the run, not the epoch


def test_at_an_epoch_s_end_the_eta_is_the_run_s() -> None:
    parser = TrainingLogParser()
    text = simulator_lines(600, 2)
    parser.feed(text[: text.index("Training Epoch 1: ")])
    assert parser.state.step == 300
    assert eta_of(parser.state) == pytest.approx(300)


def test_speculators_dict_lines_of_the_older_form() -> None:
    parser = TrainingLogParser()
    parser.feed(SPECULATORS_DICTS)
    state = parser.state
    # Counted as speculators counts: epochs from 0, the step logged before it is counted.
    assert (state.step, state.epoch) == (4401, 4)
    assert (state.train.loss, state.eval.loss) == (2.5, 2.3)
    assert state.train.accuracy_by_position == {0: 0.71, 1: 0.42}
    assert state.train.acceptance_length == pytest.approx(1 + 0.71 + 0.42)  # full_acc: cumulative
    assert state.best_eval_acceptance == pytest.approx(1 + 0.73 + 0.45)
    assert state.learning_rate == 5e-05


def test_a_plain_tqdm_bar_and_noise() -> None:
    parser = TrainingLogParser()
    parser.feed("Loading checkpoint shards: 100%|██████████| 4/4 [00:03<00:00,  1.2it/s]\n")
    parser.feed("hidden states:  12%|█▏        | 1200/10000 [05:00<36:40,  4.0it/s]\r")
    parser.feed("Traceback (most recent call last):\nnot a dict {oops\n")
    assert (parser.state.step, parser.state.total_steps) == (1200, 10000)
    assert parser.state.seconds_per_step == pytest.approx((36 * 60 + 40) / (10000 - 1200))
    assert eta_of(parser.state) == pytest.approx(36 * 60 + 40)


def test_hostile_lines_leave_the_figures_alone() -> None:
    parser = TrainingLogParser()
    parser.feed("step 5: {'loss': 1.5, 'acc_0': 0.5}\n")
    parser.feed("step 6: " + "{'a': " * 5000 + "1" + "}" * 5000 + "\n")  # nested past the stack
    parser.feed("step 7: {'loss': " + "9" * 70_000 + "}\n")  # past the length read
    parser.feed("step 8: {'loss': nan, 'acc_0': float('inf')}\n")  # not literals
    parser.feed("step 9: {'loss': True, 'acc_0': 'high', 'acc_1': [1, 2]}\n")  # not numbers
    run_on = ", ".join(f"k{i}=1" for i in range(600))  # a record past any real one's keys
    parser.feed(f"           INFO     train/loss=2.000, {run_on}\n")
    parser.feed("           INFO     val/loss_epoch=inf, epoch=0\n")
    parser.feed("Epoch 0 100% ━━━ 5/0  [ 0:00:00 < 0:00:00 , 9 it/s ]\n")
    state = parser.state
    assert (state.train.loss, state.train.accuracy_by_position) == (1.5, {0: 0.5})
    assert (state.eval.loss, state.steps_per_epoch) == (None, None)
    assert state.step == 9


async def test_a_training_job_shows_its_progress_in_the_snapshot(state_dir: Path) -> None:
    trainer = JobSpec(
        ("{python}", "-m", "agent.simulator.train", "--steps", "60", "--step-s", "0.01", "--log-interval", "10"),
        kind="train", gpu=True,
    )  # fmt: skip
    async with local_link(state_dir, PipelineConfig(jobs={"train": trainer})) as link:
        job = await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="train-1")

        def done(snapshot: Snapshot) -> bool:
            ours = [t for t in snapshot.training if t.job_id == job.id]
            return any(t.step == 60 and t.best_eval_step is not None for t in ours)

        snapshot = await snapshot_where(link, done, 30)
        [progress] = [t for t in snapshot.training if t.job_id == job.id]
    # Overall, like the step: once "step 60/30", the step overall and the total per epoch.
    assert (progress.step, progress.total_steps, progress.epoch, progress.epochs) == (60, 60, 2, 2)
    assert progress.best_eval_step is not None
    assert progress.best_eval_step < 60, (
        "the stand-in's acceptance sags at the end: the best is earlier"
    )
    assert progress.loss is not None
    assert progress.total_note == "the trainer's log"
    assert progress.eval is not None  # the stand-in's Eval lines: the evaluation's figures
    assert progress.eval.acceptance_length is not None
    assert progress.eval.acceptance_length > 1
    assert progress.acceptance_length is None  # its bar has no per-position accuracy
    assert len(progress.loss_history) >= 6


def test_an_accuracy_past_one_is_no_reading_and_never_the_best_evaluation() -> None:
    parser = TrainingLogParser()
    parser.feed("step 10: {'eval/acc_0': 0.7, 'eval/loss': 1.5}\n")
    parser.feed("step 20: {'eval/acc_0': 1e308, 'eval/acceptance_rate': 7.0, 'eval/loss': 1.2}\n")
    parser.feed("Eval - Step 30 [1/2], position 0,  Acc: 1e308\n")
    assert parser.state.eval.accuracy_by_position == {0: 0.7}
    assert parser.state.eval.acceptance_rate is None
    assert parser.state.eval.loss == 1.2, "the loss beside it is a reading"
    assert parser.state.best_eval_acceptance == 1.7


def test_a_validation_after_the_epoch_s_last_step_is_dated_there_not_at_the_last_record() -> None:
    parser = TrainingLogParser()
    parser.feed("Training epoch 1/2 started\n")
    parser.feed("{'train': {'loss': 2.0}, 'epoch': 0, 'global_step': 15}\n")  # logged every 8
    parser.feed("Epoch 0 100% ━━━━━━━━━━ 20/20 [0:00:04 < 0:00:00, 5 it/s]\n")
    parser.feed("Training epoch 1/2 completed\nValidation epoch 1/2 started\n")
    parser.feed("{'val': {'loss_epoch': 1.5, 'full_acc_0_epoch': 0.6}, 'epoch': 0}\n")
    assert parser.state.eval.step == 20
    assert parser.state.best_eval_step == 20
