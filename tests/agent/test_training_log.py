"""Training progress from the log lines of each trainer (samples written from their formats)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent.probes.training_log import TrainingLogParser
from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from console.link.local_link import open_local_link

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
SPECFORGE_NEW = (
    "step 100: {'train/acc_0': 0.70, 'train/acc_1': 0.50, 'train/loss': 3.1, 'train/lr': 0.0001, "
    "'train/acceptance_rate': 0.52, 'perf/optimizer_steps_per_hour': 812.5}\n"
    "step 200: {'eval/acc_0': 0.80, 'eval/acc_1': 0.60, 'eval/loss': 2.9}\n"
    "step 300: {'eval/acc_0': 0.78, 'eval/acc_1': 0.50, 'eval/loss': 2.7}\n"
)
SPECULATORS = (
    "{'train': {'loss_0': 1.5, 'loss_1': 1.0, 'full_acc_0': 0.71, 'full_acc_1': 0.42, 'cond_acc_1': 0.59}, "
    "'epoch': 3, 'lr': 5e-05, 'global_step': 4400}\n"
    "{'val': {'loss_0': 1.4, 'loss_1': 0.9, 'full_acc_0': 0.73, 'full_acc_1': 0.45}, 'epoch': 3, 'global_step': 4400}\n"
)


def test_specforge_older_tqdm_and_eval_lines() -> None:
    parser = TrainingLogParser()
    parser.feed(SPECFORGE_OLD)
    state = parser.state
    # The bar counts within its epoch (2000 a epoch); the eval line says epoch 2 of 10: overall.
    assert (state.step, state.total_steps, state.epoch, state.epochs) == (840, 20000, 2, 10)
    per_step = (14 * 60 + 30) / (2000 - 840)  # the bar's time left is its epoch's
    assert state.eta_s == pytest.approx(per_step * (20000 - 840))
    assert state.loss == pytest.approx(2.301)
    assert state.accuracy_by_position == {0: 0.74, 1: 0.60, 2: 0.50}
    assert state.acceptance_length == pytest.approx(1 + 0.74 + 0.74 * 0.60 + 0.74 * 0.60 * 0.50)
    assert state.acceptance_rate == pytest.approx(0.74)
    assert state.best_eval_step == 840


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
    assert state.eta_s == 0


def test_within_the_second_epoch_the_step_counts_on_from_the_first() -> None:
    parser = TrainingLogParser()
    text = simulator_lines(600, 2)
    second = text.index("Training Epoch 1: ")
    parser.feed(text[: text.index("\r", text.index("| 150/300", second))])
    state = parser.state
    assert (state.step, state.total_steps, state.epoch, state.epochs) == (450, 600, 2, 2)
    assert state.eta_s == pytest.approx(150)  # one second a step, for the run, not the epoch


def test_at_an_epoch_s_end_the_eta_is_the_run_s() -> None:
    parser = TrainingLogParser()
    text = simulator_lines(600, 2)
    parser.feed(text[: text.index("Training Epoch 1: ")])
    assert parser.state.step == 300
    assert parser.state.eta_s == pytest.approx(300)


def test_specforge_newer_step_dicts_keep_the_best_eval_acceptance_not_the_lowest_loss() -> None:
    parser = TrainingLogParser()
    parser.feed(SPECFORGE_NEW)
    state = parser.state
    assert state.step == 300
    assert state.loss == pytest.approx(2.7)  # loss still drops...
    assert state.best_eval_step == 200  # ...while acceptance fell after step 200
    assert state.best_eval_acceptance == pytest.approx(1 + 0.80 + 0.80 * 0.60)
    assert state.learning_rate == pytest.approx(1e-4)
    assert list(state.loss_history) == [3.1, 2.9, 2.7]


def test_speculators_dict_lines() -> None:
    parser = TrainingLogParser()
    parser.feed(SPECULATORS)
    state = parser.state
    assert (state.step, state.epoch) == (4400, 3)
    assert state.accuracy_by_position == {0: 0.73, 1: 0.45}
    assert state.loss == pytest.approx(2.3)
    assert state.best_eval_acceptance == pytest.approx(1 + 0.73 + 0.73 * 0.45)


def test_a_plain_tqdm_bar_and_noise() -> None:
    parser = TrainingLogParser()
    parser.feed("Loading checkpoint shards: 100%|██████████| 4/4 [00:03<00:00,  1.2it/s]\n")
    parser.feed("hidden states:  12%|█▏        | 1200/10000 [05:00<36:40,  4.0it/s]\r")
    parser.feed("Traceback (most recent call last):\nnot a dict {oops\n")
    assert (parser.state.step, parser.state.total_steps) == (1200, 10000)
    assert parser.state.eta_s == 36 * 60 + 40


async def test_a_training_job_shows_its_progress_in_the_snapshot(state_dir: Path) -> None:
    trainer = JobSpec(
        ("{python}", "-m", "agent.simulator.train", "--steps", "60", "--step-s", "0.01", "--log-interval", "10"),
        kind="train", gpu=True,
    )  # fmt: skip
    link = await open_local_link(state_dir, PipelineConfig(jobs={"train": trainer}))
    try:
        job = await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="train-1")
        deadline = time.monotonic() + 30
        while True:
            snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
            progress = next((t for t in snapshot.training if t.job_id == job.id), None)
            if progress is not None and progress.step == 60 and progress.best_eval_step is not None:
                break
            assert time.monotonic() < deadline, progress
            await asyncio.sleep(0.1)
    finally:
        await link.close()
    # Overall, like the step: once "step 60/30", the step overall and the total per epoch.
    assert (progress.step, progress.total_steps, progress.epoch, progress.epochs) == (60, 60, 2, 2)
    assert progress.best_eval_step is not None
    assert progress.best_eval_step < 60, (
        "the stand-in's acceptance sags at the end: the best is earlier"
    )
    assert progress.loss is not None
    assert progress.acceptance_length is not None
    assert progress.acceptance_length > 1
    assert len(progress.loss_history) >= 6
