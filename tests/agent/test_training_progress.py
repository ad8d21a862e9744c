"""The snapshot's training figures: the total from the log or the configuration, the pace, the
ETA, and the wire form of the evaluation kept apart from training."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
from typing import Any

import pytest

from agent.probes.training.command import ConfiguredRun
from agent.probes.training.log import TrainingLogParser, TrainingState
from agent.probes.training.progress import FROM_THE_LOG, NO_TOTAL, StepPace, progress_of
from agent.protocol import (
    METHODS,
    Response,
    Snapshot,
    TrainingProgress,
    decode,
    encode,
    parse_result,
)
from agent.protocol.snapshot import TrainingEval

MAX_STEPS = ConfiguredRun(6000, "training.max_steps in run.yaml", 3)
DATA = ConfiguredRun(6000, "3 epoch(s) × 2,000 steps: 16,000 feature files", 3, 2000)


def state_at(step: int, *, seconds_per_step: float | None = None) -> TrainingState:
    state = TrainingState(step=step, seconds_per_step=seconds_per_step)
    state.train.loss = 2.0
    return state


def test_the_configured_total_stands_where_the_log_gives_none() -> None:
    progress = progress_of("t-1", state_at(1200, seconds_per_step=0.5), MAX_STEPS, None)
    assert (progress.total_steps, progress.total_note, progress.epochs) == (
        6000, "training.max_steps in run.yaml", 3,
    )  # fmt: skip
    assert progress.eta_s == pytest.approx(0.5 * 4800)  # the trainer's own pace, none measured
    assert progress.epoch is None  # no epoch length: max_steps alone does not say


def test_the_epoch_follows_from_the_data_s_epoch_length() -> None:
    assert progress_of("t-1", state_at(2000), DATA, None).epoch == 1
    assert progress_of("t-1", state_at(2001), DATA, None).epoch == 2
    assert progress_of("t-1", state_at(6000), DATA, None).epoch == 3


def test_the_measured_pace_wins_over_the_trainer_s_own() -> None:
    progress = progress_of("t-1", state_at(1200, seconds_per_step=0.5), MAX_STEPS, 2.0)
    assert progress.seconds_per_step == 2.0
    assert progress.eta_s == pytest.approx(2.0 * 4800)


def test_max_steps_caps_what_the_epochs_in_the_log_would_run() -> None:
    state = state_at(100)
    state.steps_per_epoch, state.epochs = 5000, 2  # speculators: an epoch bar has closed
    capped = progress_of(
        "t-1", state, ConfiguredRun(600, "--max-steps (a cap on 2 epochs)", 2), None
    )
    assert (capped.total_steps, capped.total_note) == (600, "--max-steps (a cap on 2 epochs)")
    uncapped = progress_of("t-1", state, ConfiguredRun(20_000, "trainer.max_steps", 2), None)
    assert (uncapped.total_steps, uncapped.total_note) == (10_000, FROM_THE_LOG)


def test_with_no_total_the_reason_is_carried() -> None:
    lying = ConfiguredRun(note="training.max_steps = -5 in run.yaml is not a positive whole number")
    progress = progress_of("t-1", state_at(10, seconds_per_step=1.0), lying, None)
    assert (progress.total_steps, progress.eta_s) == (None, None)
    assert progress.total_note == lying.note
    assert progress_of("t-1", state_at(10), ConfiguredRun(), None).total_note == NO_TOTAL


def test_at_the_total_the_eta_is_zero_whatever_the_pace() -> None:
    assert progress_of("t-1", state_at(6000), MAX_STEPS, None).eta_s == 0.0


def test_a_job_that_ended_short_of_its_total_has_no_time_left_to_show() -> None:
    state = state_at(1200, seconds_per_step=0.5)
    assert progress_of("t-1", state, MAX_STEPS, 2.0, running=False).eta_s is None
    assert progress_of("t-1", state_at(6000), MAX_STEPS, 2.0, running=False).eta_s == 0.0


def test_the_pace_is_measured_over_steps_seen_on_the_agent_s_clock() -> None:
    pace = StepPace()
    pace.note(100.0, 10)
    assert pace.seconds_per_step is None
    pace.note(105.0, 10)  # no new step: the pace is not diluted by reads that saw none
    pace.note(130.0, 40)
    assert pace.seconds_per_step == pytest.approx(1.0)
    pace.note(131.0, 5)  # resumed from an earlier checkpoint: start over
    assert pace.seconds_per_step is None
    pace.note(1200.0, 105)
    pace.note(2400.0, 705)
    pace.note(2410.0, 715)  # the 131 s sample has left the 15-minute window
    assert pace.seconds_per_step == pytest.approx((2410.0 - 1200.0) / (715 - 105))


def eval_progress() -> TrainingProgress:
    """A training step and an evaluation, printed by SpecForge's own `_logger`."""
    console = importlib.import_module("specforge.training.assembly")._logger
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        console({"acc_0": 0.7, "acc_1": 0.5, "acc": 0.6, "loss": 3.1, "lr": 0.0001}, 100)
        console(
            {"eval/avg_loss": 2.5, "eval/avg_acc": 0.8, "eval/per_position_acc": [0.8, 0.6]}, 100
        )
    parser = TrainingLogParser()
    parser.feed(printed.getvalue())
    return progress_of("t-1", parser.state, MAX_STEPS, None)


def test_an_evaluation_is_carried_apart_from_training() -> None:
    progress = eval_progress()
    assert (progress.loss, progress.accuracy) == (3.1, 0.6)
    assert progress.acceptance_length == pytest.approx(1 + 0.7 + 0.7 * 0.5)
    length = 1 + 0.8 + 0.8 * 0.6
    assert progress.eval is not None
    assert progress.eval == TrainingEval(100, 2.5, 0.8, progress.eval.acceptance_length, None, (2.5,),
                                         progress.eval.acceptance_history)  # fmt: skip
    assert progress.eval.acceptance_length == pytest.approx(length)
    assert progress.eval.acceptance_history == pytest.approx((length,))


def test_the_training_figures_cross_the_wire_and_an_older_agent_s_still_decode() -> None:
    progress = eval_progress()
    snapshot = Snapshot(1.0, "h", None, (), training=(progress,))
    result: Any = snapshot
    line = encode(Response(1, result)).decode()
    assert '"eval":{"step":100,"loss":2.5,"accuracy":0.8,' in line
    response = decode(line)
    assert isinstance(response, Response)
    assert parse_result(METHODS["snapshot"], response).training == (progress,)
    start = line.index(',"accuracy":0.6,"eval"')  # the fields an agent before them lacks
    end = line.index('"seconds_per_step":null') + len('"seconds_per_step":null')
    response = decode(line[:start] + line[end:])
    assert isinstance(response, Response)
    [decoded] = parse_result(METHODS["snapshot"], response).training
    assert decoded == dataclasses.replace(
        progress, accuracy=None, eval=None, total_note="", seconds_per_step=None
    )
