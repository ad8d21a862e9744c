"""Drafter training progress read from its log, whichever trainer wrote it.

Recognised: SpecForge's older tqdm bar (`Training Epoch 3: 41%|...| 820/2000 [..<.., loss=..]`)
and its `Eval - Step N [e/E], position i,  Acc: x` lines; SpecForge's newer `step N: {...}` dict
lines (with or without `train/` and `eval/` prefixes); speculators' `{"train": {"loss_0": ...,
"full_acc_0": ...}, "epoch": ..., "lr": ..., "global_step": ...}` lines; and any plain tqdm bar.
Acceptance is tracked as well as loss: acceptance can fall while loss still drops, so the best
eval acceptance is what says which checkpoint to keep.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

HISTORY = 240
_TQDM = re.compile(
    r"(?P<desc>[^|\r]*?):?\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>[^<\]]*)<(?P<remaining>[^,\]]*)(?:,\s*(?P<rest>[^\]]*))?\]"
)
_EPOCH = re.compile(r"Epoch\s+(\d+)")
_EVAL = re.compile(
    r"Eval - Step (?P<step>\d+) \[(?P<epoch>\d+)/(?P<epochs>\d+)\], position (?P<pos>\d+),\s+"
    r"(?P<name>Acc|Acceptance Rate|pLoss): (?P<value>[-+0-9.eE]+)"
)
_STEP_DICT = re.compile(r"step (?P<step>\d+): (?P<dict>\{.*\})\s*$")
_POSITION_KEY = re.compile(
    r"^(?:(?P<split>train|eval|val)/)?(?P<name>acc|full_acc|ploss|loss|acceptance_rate)_(?P<pos>\d+)$"
)


@dataclass
class TrainingState:
    """What the log has said so far.

    `step` and `total_steps` count over the whole run, never within an epoch: a per-epoch
    tqdm bar (`Training Epoch N: ... n/per_epoch`) gives `epoch_step` and `steps_per_epoch`,
    from which the overall figures are made (`Eval - Step` lines say where the epoch began).
    """

    step: int | None = None
    total_steps: int | None = None
    epoch: int | None = None
    epochs: int | None = None
    """How many epochs the run has, when a line says (`Eval - Step N [e/E]`)."""
    epoch_step: int | None = None
    steps_per_epoch: int | None = None
    epoch_start_step: int | None = None
    """Overall steps done before the epoch the bar counts."""
    seconds_per_step: float | None = None
    loss: float | None = None
    learning_rate: float | None = None
    accuracy_by_position: dict[int, float] = field(default_factory=dict)
    acceptance_rate: float | None = None
    eta_s: float | None = None
    best_eval_acceptance: float | None = None
    best_eval_step: int | None = None
    loss_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    acceptance_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))

    @property
    def acceptance_length(self) -> float | None:
        """Expected tokens accepted per draft: 1 + sum over k of the product of acc_0..acc_k."""
        if not self.accuracy_by_position:
            return None
        total, chain = 1.0, 1.0
        for position in sorted(self.accuracy_by_position):
            chain *= self.accuracy_by_position[position]
            total += chain
        return total


class TrainingLogParser:
    """Feed it log text; it keeps the latest state."""

    def __init__(self) -> None:
        self.state = TrainingState()

    def feed(self, text: str) -> None:
        """Take a chunk of log (lines, and tqdm's carriage-return redraws)."""
        for line in re.split(r"[\r\n]+", text):
            if line.strip():
                self.take_line(line)

    def take_line(self, line: str) -> None:
        """Update the state from one line, whatever trainer wrote it."""
        if (match := _EVAL.search(line)) is not None:
            self._eval_line(match)
        elif (match := _STEP_DICT.search(line)) is not None:
            self._metrics(_literal(match["dict"]), step=int(match["step"]))
        elif "{" in line and (
            '"train"' in line or "'train'" in line or '"val"' in line or "'val'" in line
        ):
            self._speculators(_literal(line[line.index("{") :]))
        elif (match := _TQDM.search(line)) is not None:
            self._tqdm(match)

    def _eval_line(self, match: re.Match[str]) -> None:
        state, value, position = self.state, float(match["value"]), int(match["pos"])
        state.step, state.epoch = int(match["step"]), int(match["epoch"])
        state.epochs = int(match["epochs"])
        if state.epoch_step is not None:
            state.epoch_start_step = state.step - state.epoch_step
        self._overall_total()
        if match["name"] == "Acc":
            state.accuracy_by_position[position] = value
            if position == max(state.accuracy_by_position):
                self._record_acceptance(state.acceptance_length, evaluated=True)
        elif match["name"] == "Acceptance Rate" and position == 0:
            state.acceptance_rate = value

    def _metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        state = self.state
        state.step = step if step is not None else state.step
        evaluated = False
        for key, value in metrics.items():
            if not isinstance(value, (int, float)):
                continue
            name = str(key).split("/", 1)[-1]
            evaluated = evaluated or str(key).startswith(("eval/", "val/"))
            if (match := _POSITION_KEY.match(str(key))) is not None and match["name"] in (
                "acc",
                "full_acc",
            ):
                state.accuracy_by_position[int(match["pos"])] = float(value)
            elif name == "loss":
                state.loss = float(value)
                state.loss_history.append(float(value))
            elif name == "lr":
                state.learning_rate = float(value)
            elif name == "acceptance_rate":
                state.acceptance_rate = float(value)
        self._record_acceptance(state.acceptance_length, evaluated=evaluated)

    def _speculators(self, record: dict[str, Any]) -> None:
        split = "val" if "val" in record else "train"
        metrics = record.get(split) if isinstance(record.get(split), dict) else {}
        assert isinstance(metrics, dict)
        losses = [
            float(v)
            for k, v in metrics.items()
            if str(k).startswith("loss_") and isinstance(v, (int, float))
        ]
        prefixed = {f"{split}/{k}": v for k, v in metrics.items()}
        if losses:
            prefixed[f"{split}/loss"] = sum(losses)
        for key in ("lr", "epoch"):
            if key in record:
                prefixed[key] = record[key]
        if isinstance(record.get("epoch"), int):
            self.state.epoch = record["epoch"]
        step = record.get("global_step")
        self._metrics(prefixed, step=step if isinstance(step, int) else None)

    def _tqdm(self, match: re.Match[str]) -> None:
        state = self.state
        n, total = int(match["n"]), int(match["total"])
        state.eta_s = _clock_seconds(match["remaining"])
        epoch = _EPOCH.search(match["desc"] or "")
        if epoch is None:  # a bar over the whole run
            state.step, state.total_steps = n, total
        else:
            self._epoch_bar(int(epoch[1]), n, total)
        postfix = {}
        for part in (match["rest"] or "").split(","):
            key, sep, value = part.strip().partition("=")
            if sep:
                postfix[key.strip()] = _number(value.strip().rstrip("s"))
        if postfix:
            self._metrics({k: v for k, v in postfix.items() if v is not None}, step=state.step)

    def _epoch_bar(self, bar_epoch: int, n: int, per_epoch: int) -> None:
        """A per-epoch bar: the overall step is where its epoch began plus its count."""
        state = self.state
        if state.epoch_step is not None and n < state.epoch_step:  # a new epoch's bar
            state.epoch_start_step = (state.epoch_start_step or 0) + (state.steps_per_epoch or 0)
        if state.epoch_start_step is None:
            state.epoch_start_step = bar_epoch * per_epoch
        state.epoch = bar_epoch + 1  # the bar counts epochs from 0; the eval lines, and we, from 1
        state.epoch_step, state.steps_per_epoch = n, per_epoch
        state.step = state.epoch_start_step + n
        if state.eta_s is not None and n < per_epoch:  # the bar's time left is its epoch's
            state.seconds_per_step = state.eta_s / (per_epoch - n)
        self._overall_total()

    def _overall_total(self) -> None:
        """The run's total steps and time left, once the epochs and their length are known."""
        state = self.state
        if state.steps_per_epoch is None or state.epochs is None:
            return
        state.total_steps = state.steps_per_epoch * state.epochs
        if state.seconds_per_step is not None and state.step is not None:
            state.eta_s = state.seconds_per_step * max(0, state.total_steps - state.step)

    def _record_acceptance(self, length: float | None, *, evaluated: bool) -> None:
        if length is None:
            return
        state = self.state
        state.acceptance_history.append(length)
        if evaluated and (
            state.best_eval_acceptance is None or length > state.best_eval_acceptance
        ):
            state.best_eval_acceptance, state.best_eval_step = length, state.step


def _literal(text: str) -> dict[str, Any]:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return {}
    return value if isinstance(value, dict) else {}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _clock_seconds(text: str) -> float | None:
    parts = text.strip().split(":")
    if not all(p.isdigit() for p in parts) or not parts or parts == [""]:
        return None
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds
