"""The training panel's figures from the lines SpecForge 0.2.0 and speculators 0.9.0 really print.

Each log here is printed by the trainer's own code from its wheel (requirements/trainers.in): SpecForge's
TrainerController.fit loop, `_logger`, TrackerLogger and Evaluator on the CPU, with a stand-in
strategy and backend in place of a model on a GPU; speculators' setup_root_logger, metric logger,
eagle3 compute_metrics and tqdm.rich bars in a child process whose output goes to a file, as a
job's does (its trainer's loop needs an accelerator, so the records are shaped as
train/trainer.py ~560-597 and ~641-670 shape them). The parser is checked against the figures
the trainers computed.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from agent.probes.training.alerts import training_alerts
from agent.probes.training.command import TrainerCommand, trainer_command
from agent.probes.training.log import TrainingLogParser, TrainingState
from agent.probes.training.progress import progress_of
from agent.probes.training.specforge_config import specforge_run
from agent.probes.training.speculators_config import UNTIL_FIRST_EPOCH, speculators_run
from agent.probes.training.watch import TrainingWatch
from agent.protocol import JobInfo, TrainingProgress
from tests.support.clocks import SteppedClock

POSITIONS = 3


class StandInStrategy:
    """Per-position counts as SpecForge's EAGLE3 strategy hands them to the trainer; each
    position's accuracy falls with depth and drifts with the step."""

    ploss_decay = 0.8

    def __init__(self) -> None:
        self.module = torch.nn.Linear(2, 2)

    def trainable_module(self) -> torch.nn.Module:
        return self.module

    def forward_loss(self, batch: Any, ctx: Any) -> Any:
        step = int(ctx.global_step)
        counts = [torch.tensor(100.0) for _ in range(POSITIONS)]
        metrics = {
            "acc_corrects": [torch.tensor(90.0 - 12 * i - step) for i in range(POSITIONS)],
            "acc_denoms": counts,
            "metric_losses": [torch.tensor(2.0 + 0.5 * i - 0.01 * step) for i in range(POSITIONS)],
            "metric_loss_denoms": counts,
            "acceptance_rates": [torch.tensor(0.8 - 0.1 * i) for i in range(POSITIONS)],
            "plosses": [torch.tensor(2.0 + 0.5 * i) for i in range(POSITIONS)],
        }
        step_output = importlib.import_module("specforge.training.strategies.base").StepOutput
        return step_output(loss=torch.tensor(1.5 + 0.1 * step, requires_grad=True), metrics=metrics)


class StandInOptimizer:
    def get_learning_rate(self) -> float:
        return 2e-4


class StandInBackend:
    """Backward and step are no-ops: the loop, its logging and its evaluation are SpecForge's."""

    optimizer = StandInOptimizer()

    def backward(self, loss: torch.Tensor, is_boundary: bool) -> None:
        del loss, is_boundary

    def step(self) -> torch.Tensor:
        return torch.tensor(0.5)


class NeverBetter:
    """The checkpoint manager: no evaluation is ever the best, so nothing is saved."""

    def is_better(self, metrics: dict[str, Any]) -> bool:
        return False


class RecordingTracker:
    """An external tracker (W&B and the like): keeps what it is given."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, Any]]] = []

    def log(self, values: dict[str, Any], step: int) -> None:
        self.logged.append((step, dict(values)))

    def close(self) -> None:
        """Nothing to close."""


class Diverging(StandInStrategy):
    """Its per-position losses (which SpecForge sums into the loss it logs) turn NaN from step 6
    on, as a diverged run's do."""

    def forward_loss(self, batch: Any, ctx: Any) -> Any:
        output = super().forward_loss(batch, ctx)
        if int(ctx.global_step) >= 6:
            nan = [torch.tensor(float("nan")) for _ in range(POSITIONS)]
            output.metrics["metric_losses"] = output.metrics["plosses"] = nan
        return output


class LearnsNothing(StandInStrategy):
    """Not one position is ever right: SpecForge #392's "loss and acc keep 0"."""

    def forward_loss(self, batch: Any, ctx: Any) -> Any:
        output = super().forward_loss(batch, ctx)
        output.metrics["acc_corrects"] = [torch.tensor(0.0) for _ in range(POSITIONS)]
        return output


def specforge_fit(
    *, tracker: bool, epochs: int = 2, batches: int = 4, strategy: Any = None
) -> tuple[str, list[Any]]:
    """What SpecForge prints for a fit that logs every 2 steps and evaluates every 4, and the
    (step, metrics) its logger was handed."""
    controller = importlib.import_module("specforge.training.controller")
    contracts = importlib.import_module("specforge.runtime.contracts")
    console = importlib.import_module("specforge.training.assembly")._logger
    handed: list[tuple[int, dict[str, Any]]] = []
    if tracker:
        recorder = RecordingTracker()
        tracking = importlib.import_module("specforge.training.tracking")
        logger: Any = tracking.TrackerLogger(recorder, console_logger=console)
        handed = recorder.logged
    else:

        def logger(metrics: dict[str, Any], step: int) -> None:
            handed.append((step, dict(metrics)))
            console(metrics, step)

    def data(count: int) -> list[Any]:
        tensors = {"loss_mask": torch.ones(4)}
        return [contracts.TrainBatch([f"s{i}"], "eagle3", tensors) for i in range(count)]

    core = controller.TrainerCore(strategy or StandInStrategy(), StandInBackend())
    fit = controller.TrainerController(
        core, run_id="r", log_interval=2, eval_interval=4, eval_data_factory=lambda: data(2),
        num_epochs=epochs, logger=logger, checkpoint_manager=NeverBetter(),
    )  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        fit.fit(data(batches))
    return printed.getvalue(), handed


def parsed(text: str) -> TrainingState:
    parser = TrainingLogParser()
    parser.feed(text)
    return parser.state


def last(
    handed: list[tuple[int, dict[str, Any]]], *, evaluation: bool
) -> tuple[int, dict[str, Any]]:
    return [(s, m) for s, m in handed if any(k.startswith("eval/") for k in m) == evaluation][-1]


@pytest.mark.parametrize("tracker", [False, True], ids=["console", "tracker"])
def test_specforge_step_dicts_give_training_and_eval_figures_apart(tracker: bool) -> None:
    text, handed = specforge_fit(tracker=tracker)
    assert "step 8: {" in text
    assert "eval/avg_acc" in text
    assert ("'train/acc_0'" in text) == tracker  # the tracker's train/ prefix and /index keys
    assert ("'eval/per_position_acc/0'" in text) == tracker
    state = parsed(text)
    train_step, train = last(handed, evaluation=False)
    train = {k.removeprefix("train/"): v for k, v in train.items()}
    eval_step, evaluation = last(handed, evaluation=True)
    assert state.step == train_step == 8
    assert state.train.step == 8
    assert state.eval.step == eval_step == 8
    assert state.train.loss == pytest.approx(train["loss"])
    assert state.train.accuracy == pytest.approx(train["acc"])
    assert state.train.accuracy_by_position == pytest.approx(
        {i: train[f"acc_{i}"] for i in range(POSITIONS)}
    )
    assert state.train.mean_acceptance_rate == pytest.approx(train["acceptance_rate"])
    assert state.learning_rate == pytest.approx(2e-4)
    assert state.seconds_per_step == pytest.approx(train["perf/optimizer_step_time_s"])
    # The evaluator's figures, not the training step's: its loss is the eval pass's own.
    assert state.eval.loss == pytest.approx(evaluation["eval/avg_loss"])
    assert state.eval.loss != pytest.approx(state.train.loss)
    assert state.eval.accuracy == pytest.approx(evaluation["eval/avg_acc"])
    simulated = evaluation["eval/simulated_acc_len"]  # its chained per-position accuracy
    assert state.eval.acceptance_length == pytest.approx(1 + simulated)


def test_a_later_training_step_leaves_the_last_evaluation_as_it_was() -> None:
    text, handed = specforge_fit(tracker=False)
    lines = text.splitlines()
    state = parsed(
        "\n".join(lines[: lines.index(next(x for x in lines if x.startswith("step 6:"))) + 1])
    )
    _, first_eval = [(s, m) for s, m in handed if "eval/avg_loss" in m][0]
    assert (state.step, state.eval.step) == (6, 4)
    assert state.eval.loss == pytest.approx(first_eval["eval/avg_loss"])
    assert len(state.train.loss_history) == 3
    assert len(state.eval.loss_history) == 1
    assert state.best_eval_step == 4


def test_the_best_evaluation_is_kept_by_acceptance_not_by_the_lowest_loss() -> None:
    text, handed = specforge_fit(tracker=False)
    state = parsed(text)
    evaluations = [(s, m) for s, m in handed if "eval/simulated_acc_len" in m]
    assert [s for s, _ in evaluations] == [4, 8]
    losses = list(state.train.loss_history)
    assert losses[-1] < losses[1]  # training loss still drops from step 4 to step 8...
    later = evaluations[1][1]["eval/simulated_acc_len"]
    assert later < evaluations[0][1]["eval/simulated_acc_len"]  # ...while acceptance falls
    assert state.best_eval_step == 4
    assert state.best_eval_acceptance == pytest.approx(
        1 + evaluations[0][1]["eval/simulated_acc_len"]
    )
    assert state.eval.acceptance_length == pytest.approx(1 + later)


def test_specforge_gives_no_total_in_a_file_so_the_config_does(tmp_path: Path) -> None:
    text, _ = specforge_fit(tracker=False)
    assert "Training" not in text
    assert "%|" not in text
    state = parsed(text)
    assert state.total_steps is None
    (tmp_path / "run.yaml").write_text("training:\n  max_steps: 40\n  num_epochs: 2\n")
    command = trainer_command(("specforge", "train", "--config", "run.yaml"), tmp_path)
    assert command is not None
    configured = specforge_run(command)
    progress = progress_of("t-1", state, configured, None)
    assert (progress.total_steps, progress.epochs) == (40, 2)
    assert progress.total_note == "training.max_steps in run.yaml"
    assert state.seconds_per_step is not None  # SpecForge's own perf/optimizer_step_time_s
    assert progress.eta_s == pytest.approx(state.seconds_per_step * 32)
    assert progress.eval is not None
    assert progress.eval.step == 8


def test_the_watch_takes_the_total_from_the_config_and_the_pace_from_its_clock(
    tmp_path: Path,
) -> None:
    text, _ = specforge_fit(tracker=False)
    lines = text.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("step 6:"))
    (tmp_path / "run.yaml").write_text("training:\n  max_steps: 40\n")
    log = tmp_path / "train.log"
    log.write_text("".join(lines[:cut]))
    job = JobInfo(
        "train-1", "train", "train", "running", ("/venv/bin/specforge", "train", "-c", "run.yaml"),
        pid=1, log_path=str(log), cwd=str(tmp_path),
    )  # fmt: skip
    clock = SteppedClock()
    watch = TrainingWatch(clock.monotonic)
    [first] = watch.progress((job,))
    assert (first.step, first.total_steps) == (4, 40)
    clock.monotonic_s += 20.0
    with log.open("a") as handle:
        handle.write("".join(lines[cut:]))
    [later] = watch.progress((job,))
    assert (later.step, later.total_steps) == (8, 40)
    assert later.seconds_per_step == pytest.approx(5.0)  # 4 steps in 20 s of the agent's clock
    assert later.eta_s == pytest.approx(5.0 * 32)
    assert later.eval is not None
    assert later.eval.step == 8
    assert later.eval.loss is not None
    assert later.eval.loss != pytest.approx(later.loss)


def watched(text: str, folder: Path) -> TrainingProgress:
    """The progress the agent's watch makes of a SpecForge job that printed `text`."""
    (folder / "run.yaml").write_text("run_id: r\noutput_dir: out\ntraining:\n  max_steps: 400\n")
    (folder / "train.log").write_text(text)
    job = JobInfo(
        "train-1", "train", "train", "running", ("/venv/bin/specforge", "train", "-c", "run.yaml"),
        pid=1, log_path=str(folder / "train.log"), cwd=str(folder),
    )  # fmt: skip
    [progress] = TrainingWatch(SteppedClock().monotonic).progress((job,))
    return progress


def test_a_loss_specforge_prints_as_nan_is_a_diverged_run_not_a_lost_record(
    tmp_path: Path,
) -> None:
    """SpecForge prints `{'loss': nan, ...}`, which literal_eval refuses: the record was lost,
    and the panel showed the last finite loss while the run went on diverged."""
    text, handed = specforge_fit(tracker=False, strategy=Diverging())
    assert "'loss': nan" in text
    progress = watched(text, tmp_path)
    assert progress.step == 8, "the NaN records are read, not skipped"
    assert progress.loss_not_finite
    [alert] = [a for a in training_alerts((progress,), 1.0) if a.kind == "training_diverged"]
    assert alert.severity == "error"
    assert "NaN or infinite at step 8" in alert.message
    assert not any(v != v for v in progress.loss_history), "no NaN reaches the history"
    healthy = watched(specforge_fit(tracker=False)[0], tmp_path)
    assert not healthy.loss_not_finite
    assert training_alerts((healthy,), 1.0) == []
    del handed


def test_accuracy_stuck_at_zero_for_ten_logged_steps_says_nothing_is_learnt(
    tmp_path: Path,
) -> None:
    text, handed = specforge_fit(tracker=False, epochs=5, strategy=LearnsNothing())
    train = [m for _, m in handed if "acc" in m]
    assert len(train) == 10
    assert all(m["acc"] == 0.0 for m in train)
    progress = watched(text, tmp_path)
    assert progress.zero_records == 10
    [alert] = training_alerts((progress,), 1.0)
    assert alert.kind == "training_stuck"
    assert "exactly 0 for 10 logged steps" in alert.message
    fewer = watched(specforge_fit(tracker=False, epochs=4, strategy=LearnsNothing())[0], tmp_path)
    assert fewer.zero_records == 8
    assert training_alerts((fewer,), 1.0) == []


def test_acceptance_falling_for_three_evaluations_after_its_best_says_the_peak_passed(
    tmp_path: Path,
) -> None:
    text, handed = specforge_fit(tracker=False, epochs=4)
    evaluations = [(s, m["eval/simulated_acc_len"]) for s, m in handed if "eval/avg_acc" in m]
    assert [s for s, _ in evaluations] == [4, 8, 12, 16]
    assert [v for _, v in evaluations] == sorted((v for _, v in evaluations), reverse=True)
    progress = watched(text, tmp_path)
    assert (progress.best_eval_step, progress.evals_since_best) == (4, 3)
    [alert] = training_alerts((progress,), 1.0)
    assert (alert.kind, alert.severity) == ("training_peak_passed", "warning")
    assert "serve the checkpoint of step 4, not the last" in alert.message
    assert progress.best_checkpoint is None
    assert progress.best_checkpoint_note == f"no checkpoint under {tmp_path / 'out'} yet"
    for step in (2, 8, 12):  # as SpecForge's CheckpointManager names them (run_id "r")
        (tmp_path / "out" / f"r-step{step}").mkdir(parents=True, exist_ok=True)
    missing = watched(text, tmp_path)
    assert missing.best_checkpoint_note == (
        f"no checkpoint for step 4 under {tmp_path / 'out'} (saved: 2, 8, 12)"
    )
    (tmp_path / "out" / "r-step4").mkdir()
    found = watched(text, tmp_path)
    assert found.best_checkpoint == str(tmp_path / "out" / "r-step4")
    [alert] = training_alerts((found,), 1.0)
    assert f"serve {tmp_path / 'out' / 'r-step4'}, not the last" in alert.message
    two_after = watched(specforge_fit(tracker=False, epochs=3)[0], tmp_path)
    assert two_after.evals_since_best == 2
    assert training_alerts((two_after,), 1.0) == []


SPECULATORS_SCRIPT = textwrap.dedent(
    """
    import json, logging, sys, time

    import torch
    from tqdm.rich import tqdm

    from speculators.losses.utils import resolve_loss_config
    from speculators.models.eagle3.metrics import compute_metrics
    from speculators.train.logger import FormatDictFilter, setup_metric_logger, setup_root_logger
    from speculators.train.trainer import _StepTimer
    from speculators.train.utils import normalize_counted_metrics

    out, epochs, batches = sys.argv[1], 2, 5
    setup_root_logger()
    setup_metric_logger(loggers="", run_name=None, output_dir=out)
    root_logger = logging.getLogger("speculators")
    metric_logger = logging.getLogger("speculators.metrics")
    loss_config = resolve_loss_config("kl_div", "eager")  # the fused losses need Triton

    def batch_metrics(seed):
        generator = torch.Generator().manual_seed(seed)
        logits = torch.randn(1, 32, 6, generator=generator)
        targets = logits + 0.8 * torch.randn(1, 32, 6, generator=generator)
        prev_correct = torch.ones(1, 32, dtype=torch.bool)
        metrics, total = {}, torch.tensor(0.0)
        for ttt_step in range(3):
            loss, step = compute_metrics(logits, targets, None, prev_correct, ttt_step, 0.8, loss_config)
            metrics |= step
            total = total + loss
        metrics["loss_sum"], metrics["loss_total"] = total.detach(), torch.tensor(1.0)
        return metrics

    def profile():
        timer = _StepTimer()
        timer.reset(True)
        for mark in ("start", "queue", "pre_h2d", "fetch", "fwd", "pre_clip", "bwd", "opt"):
            timer.mark_value(mark, time.perf_counter())
        return timer.profile(96)

    records, flat, global_step = [], [], 0
    def log(record):
        metric_logger.info(record, extra={"step": global_step})
        records.append(record)
        line = logging.LogRecord("speculators.metrics", 20, "", 0, record, None, None)
        FormatDictFilter().filter(line)
        flat.append(line.msg)

    for epoch in range(epochs):
        root_logger.info(f"Training epoch {epoch + 1}/{epochs} started")
        for _ in tqdm(range(batches), desc=f"Epoch {epoch}"):
            metrics = batch_metrics(global_step)
            metrics["error_records_sum"] = torch.tensor(0.0)
            metrics["error_records_total"] = torch.tensor(1.0)
            metrics = normalize_counted_metrics({k: v.item() for k, v in metrics.items()}, 1)
            lr = 1e-4 * (1 - global_step / 20)
            log({"train": metrics, "profile": profile(), "epoch": epoch, "lr": lr,
                 "global_step": global_step})
            global_step += 1
        root_logger.info(f"Training epoch {epoch + 1}/{epochs} completed")
        root_logger.info(f"Validation epoch {epoch + 1}/{epochs} started")
        summed = {}
        for index in tqdm(range(2), desc=f"Epoch {epoch}"):
            for k, v in batch_metrics(100 + 10 * epoch + index).items():
                summed[k] = v.float() if k not in summed else summed[k] + v.float()
        val = normalize_counted_metrics({k: v.item() / 2 for k, v in summed.items()}, 1)
        log({"val": {f"{k}_epoch": v for k, v in val.items()}, "epoch": epoch})
        root_logger.info(f"Validation epoch {epoch + 1}/{epochs} completed")

    from speculators.train.config import TrainConfig
    resolved = {}
    for name, argv in json.loads(sys.argv[2]).items():
        try:
            config = TrainConfig.resolve(argv + ["--verifier-name-or-path", "stand-in"])
            resolved[name] = [config.trainer.epochs, config.trainer.max_steps]
        except SystemExit:
            resolved[name] = "refused"
    with open(f"{out}/records.json", "w") as handle:
        json.dump({"records": records, "flat": flat, "configs": resolved}, handle)
    """
)
SPECULATORS_CONFIGS = {
    "flags": ["--epochs", "3", "--max-steps", "120"],
    "yaml": ["--config", "{dir}/stage.yaml"],
    "flag_over_yaml": ["--config", "{dir}/stage.yaml", "--epochs", "5"],
    "bare_yaml_default_epochs": ["--config", "{dir}/bare.yaml"],
    "lying_yaml": ["--config", "{dir}/lying.yaml"],
}


@pytest.fixture(scope="module")
def speculators_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One speculators run of 2 epochs of 5 steps, its log as a job's file, and its config reads."""
    out = tmp_path_factory.mktemp("speculators")
    (out / "stage.yaml").write_text("train:\n  trainer:\n    epochs: 4\n    max_steps: 300\n")
    (out / "bare.yaml").write_text("trainer:\n  max_steps: 50\n")
    (out / "lying.yaml").write_text("train:\n  trainer:\n    max_steps: -5\n")
    configs = {k: [a.format(dir=out) for a in v] for k, v in SPECULATORS_CONFIGS.items()}
    quiet = {"COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"}
    env = {k: v for k, v in os.environ.items() if k not in quiet}
    with (out / "train.log").open("wb") as log:
        subprocess.run(
            [sys.executable, "-c", SPECULATORS_SCRIPT, str(out), json.dumps(configs)],
            stdout=log, stderr=subprocess.STDOUT, env=env, check=True, timeout=100,
        )  # fmt: skip
    result: dict[str, Any] = json.loads((out / "records.json").read_text())
    return result | {"log": (out / "train.log").read_text(), "dir": out, "argv": configs}


def printed(value: float) -> Any:
    """What survives speculators' printing: 3 decimals, or 3 significant digits."""
    return pytest.approx(value, rel=5e-3, abs=5e-4)


def chained(accuracies: list[float]) -> float:
    return 1 + sum(accuracies)  # full_acc_i already requires positions 0..i-1 right


@pytest.mark.slow
def test_speculators_wrapped_records_epochs_and_bars(speculators_output: dict[str, Any]) -> None:
    log, records = speculators_output["log"], speculators_output["records"]
    assert "global_step=0" in log
    assert "\n                    train/" in log
    state = parsed(log)
    train = [r for r in records if "train" in r]
    evals = [r for r in records if "val" in r]
    assert state.step == train[-1]["global_step"] + 1 == 10
    assert (state.epoch, state.epochs, state.steps_per_epoch, state.total_steps) == (2, 2, 5, 10)
    figures = train[-1]["train"]
    assert state.train.loss == printed(figures["loss"])
    assert state.train.accuracy_by_position == {
        i: printed(figures[f"full_acc_{i}"]) for i in range(3)
    }
    accuracies = [figures[f"full_acc_{i}"] for i in range(3)]
    assert state.train.acceptance_length == printed(chained(accuracies))
    assert state.learning_rate == printed(train[-1]["lr"])
    assert state.seconds_per_step == printed(train[-1]["profile"]["step_ms"] / 1000)
    val = evals[-1]["val"]
    assert state.eval.loss == printed(val["loss_epoch"])
    assert state.eval.step == 10
    lengths = [chained([e["val"][f"full_acc_{i}_epoch"] for i in range(3)]) for e in evals]
    assert state.best_eval_acceptance == printed(max(lengths))
    assert state.best_eval_step == 5 * (lengths.index(max(lengths)) + 1)
    assert list(state.train.loss_history) == [printed(r["train"]["loss"]) for r in train]


@pytest.mark.slow
def test_speculators_unwrapped_records_read_the_same(speculators_output: dict[str, Any]) -> None:
    wrapped = parsed(speculators_output["log"])
    flat = parsed("\n".join(speculators_output["flat"]))
    assert flat.step == wrapped.step
    assert (flat.train.loss, flat.eval.loss) == (wrapped.train.loss, wrapped.eval.loss)
    assert flat.eval.accuracy_by_position == wrapped.eval.accuracy_by_position


@pytest.mark.slow
def test_speculators_total_is_unknown_until_an_epoch_bar_closes(
    speculators_output: dict[str, Any],
) -> None:
    log = speculators_output["log"]
    before_bar = parsed(log[: log.index("Epoch 0 100%")])
    configured = speculators_run(_command(["--epochs", "2"], speculators_output["dir"]))
    progress = progress_of("t-1", before_bar, configured, None)
    assert (progress.total_steps, progress.total_note) == (None, UNTIL_FIRST_EPOCH)
    after = progress_of("t-1", parsed(log), configured, None)
    assert (after.total_steps, after.total_note, after.eta_s) == (10, "the trainer's log", 0.0)


@pytest.mark.slow
def test_speculators_config_reads_as_speculators_resolves_it(
    speculators_output: dict[str, Any],
) -> None:
    theirs = speculators_output["configs"]
    assert theirs["lying_yaml"] == "refused"
    for name, argv in speculators_output["argv"].items():
        ours = speculators_run(_command(argv, speculators_output["dir"]))
        if theirs[name] == "refused":
            assert ours.total_steps is None, name
            assert "-5" in ours.note, name
            continue
        epochs, max_steps = theirs[name]
        assert (ours.epochs, ours.total_steps) == (epochs, max_steps), name


def _command(args: list[str], base: Path) -> TrainerCommand:
    command = trainer_command(("speculators", "train", *args), base)
    assert command is not None
    return command
