"""Drafter training progress read from its log, whichever trainer wrote it.

Recognised: SpecForge 0.2.0's `step N: {...}` dicts (training/assembly.py `_logger`; `train/`
prefixed with `name/index` keys behind an external tracker, training/tracking.py; `eval/*` from
its evaluator); SpecForge's older tqdm bar (`Training Epoch 3: 41%|...| 820/2000 [..<.., loss=..]`)
and `Eval - Step N [e/E], position i,  Acc: x` lines; speculators 0.9.0's rich-wrapped metric
records and epoch bars (speculators_log.py), and the `{'train': {...}}` dicts of older
versions; and any plain tqdm bar. Training and evaluation figures are kept apart. Acceptance is
tracked as well as loss: acceptance can fall while loss still drops, so the best eval acceptance
is what says which checkpoint to keep. The total and the ETA are progress.py's: a log
written to a file often gives no total at all.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from agent.probes.training.figures import Figures, number, share, split_of, take
from agent.probes.training.speculators_log import EPOCH_BAR, PHASE, RecordJoiner
from agent.probes.values import is_small_number

_TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|[^|]{0,200}\|\s*(?P<n>\d{1,12})/(?P<total>\d{1,12})\s*"
    r"\[(?P<elapsed>[^<\]]{0,40})<(?P<remaining>[^,\]]{0,40})(?:,\s*(?P<rest>[^\]]*))?\]"
)
"""A tqdm bar from its percentage on; what it describes is the text before (`_bar_description`).
Each part is bounded: a lazy description group before it made a search over a 12 KB line of
letters take 11 s, and one of digits longer."""
_EPOCH = re.compile(r"Epoch\s+(\d+)")
_EVAL = re.compile(
    r"Eval - Step (?P<step>\d+) \[(?P<epoch>\d+)/(?P<epochs>\d+)\], position (?P<pos>\d+),\s+"
    r"(?P<name>Acc|Acceptance Rate|pLoss): (?P<value>[-+0-9.eE]+)"
)
_STEP_HEAD = re.compile(r"step (?P<step>\d{1,12}): \{")
"""Where SpecForge's `step N: {...}` metrics dict begins; it runs to the end of the line (a
pattern ending in `.*}$` backtracked over the line from each `step N: {` in it)."""
PEAK_MARGIN = 0.005
"""An evaluation this close below the best (relative) is a plateau, not a fall past the peak."""
MAX_DICT_CHARS = 64 * 1024
"""A metrics dict is a few hundred characters; a longer one is not read (literal_eval's cost)."""
MAX_LINE_CHARS = MAX_DICT_CHARS + 256
"""Past the longest metrics dict with its prefix: a longer line is not looked at."""
MAX_PATTERN_LINE_CHARS = 2048
"""Bars, evaluation lines and rich records are short: a longer line is read only as a metrics
dict, never searched by their patterns (the cost of a search grows with the line)."""


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
    """How many epochs the run has, when a line says (`Eval - Step N [e/E]`, `Training epoch 1/3`)."""
    epoch_step: int | None = None
    steps_per_epoch: int | None = None
    epoch_start_step: int | None = None
    """Overall steps done before the epoch the bar counts."""
    seconds_per_step: float | None = None
    """As the trainer reports it (SpecForge's perf/optimizer_step_time_s, speculators'
    profile/step_ms, a tqdm bar's time left), not as the agent measures it."""
    learning_rate: float | None = None
    train: Figures = field(default_factory=Figures)
    eval: Figures = field(default_factory=Figures)
    best_eval_acceptance: float | None = None
    best_eval_step: int | None = None
    best_eval_epoch: int | None = None
    """The epoch (from 1) the best evaluation was in: speculators names its checkpoints by it."""
    evals_since_best: int = 0
    """Evaluations in a row since the best one, each below it by more than PEAK_MARGIN: the
    peak may have passed."""
    last_eval_step: int | None = None


class TrainingLogParser:
    """Feed it log text; it keeps the latest state."""

    def __init__(self) -> None:
        self.state = TrainingState()
        self._records = RecordJoiner()
        self._phase = "Training"

    def feed(self, text: str) -> None:
        """Take a chunk of log (lines, and tqdm's carriage-return redraws)."""
        for line in re.split(r"[\r\n]+", text):
            if line.strip():
                self.take_line(line)

    def take_line(self, line: str) -> None:
        """Update the state from one line, whatever trainer wrote it."""
        if len(line) > MAX_LINE_CHARS:
            return
        short = len(line) <= MAX_PATTERN_LINE_CHARS
        for record in self._records.take(line) if short else ():
            self._speculators(record.values)
        if short and (match := _EVAL.search(line)) is not None:
            self._eval_line(match)
        elif (step_dict := _step_dict(line)) is not None:
            self._metrics(_literal(step_dict[1]), step=step_dict[0])
        elif short and (match := PHASE.search(line)) is not None:
            self._phase_line(match)
        elif short and (match := EPOCH_BAR.match(line)) is not None:
            self._rich_epoch_bar(match)
        elif "{" in line and any(k in line for k in ("'train'", '"train"', "'val'", '"val"')):
            self._speculators(_flat(_literal(line[line.index("{") :])))
        elif short and (match := _TQDM.search(line)) is not None:
            self._tqdm(match, _bar_description(line, match))

    def _eval_line(self, match: re.Match[str]) -> None:
        state, position = self.state, int(match["pos"])
        value = float(match["value"])
        if match["name"] != "pLoss" and share(value) is None:
            return  # an accuracy or a rate past 1 is no reading
        state.step, state.epoch = int(match["step"]), int(match["epoch"])
        state.epochs = int(match["epochs"])
        if state.epoch_step is not None:
            state.epoch_start_step = state.step - state.epoch_step
        self._overall_total()
        if match["name"] == "Acc":
            state.eval.accuracy_by_position[position] = value
            if position == max(state.eval.accuracy_by_position):
                self._finish(state.eval, evaluated=True)
        elif match["name"] == "Acceptance Rate":
            state.eval.acceptance_rate_by_position[position] = value

    def _metrics(self, metrics: dict[str, Any], step: int | None) -> None:
        state = self.state
        state.step = step if step is not None else state.step
        touched: set[str] = set()
        for key, value in metrics.items():
            split, name = split_of(str(key))
            if take(state.eval if split == "eval" else state.train, name, value):
                touched.add(split)
            else:
                self._run_figure(name, number(value))
        for split in sorted(touched):
            self._finish(state.eval if split == "eval" else state.train, split == "eval")

    def _run_figure(self, name: str, value: float | None) -> None:
        """A figure of the run rather than of a split: its learning rate, its pace."""
        if value is None:
            return
        if name == "lr" or name.startswith("lr/"):  # lr/AdamW, lr/Muon: one each, same order
            self.state.learning_rate = value
        elif name == "perf/optimizer_step_time_s" and value > 0:
            self.state.seconds_per_step = value
        elif name == "profile/step_ms" and value > 0:
            self.state.seconds_per_step = value / 1000

    def _finish(self, figures: Figures, evaluated: bool) -> None:
        """A record of `figures` is complete: date it, keep its history, and the best eval."""
        state = self.state
        figures.step = state.step
        figures.note_history()
        length = figures.acceptance_length
        best = state.best_eval_acceptance
        if not evaluated or length is None:
            return
        if best is None or length > best:
            state.best_eval_acceptance, state.best_eval_step = length, state.step
            state.best_eval_epoch, state.evals_since_best = state.epoch, 0
        elif length >= best * (1 - PEAK_MARGIN):  # a plateau at the best: not past its peak
            state.evals_since_best = 0
        elif state.step != state.last_eval_step:  # one evaluation logged in parts counts once
            state.evals_since_best += 1
        state.last_eval_step = state.step

    def _speculators(self, record: dict[str, Any]) -> None:
        """A speculators record, whose counts start at 0.

        Its epoch counts from 0, and its global_step is logged before the step just done is
        counted (train/trainer.py ~587-597).
        """
        epoch, step = _count(record.get("epoch")), _count(record.get("global_step"))
        if epoch is not None:
            self.state.epoch = epoch + 1
        self._metrics(record, step=None if step is None else step + 1)

    def _phase_line(self, match: re.Match[str]) -> None:
        """A "Training epoch 1/3 started" line (speculators): which bar is next, and the epochs.

        "Training epoch 1/3 completed" is the epoch's last step, whatever step its last metrics
        record was logged at: a validation after step 20 was dated at step 16.
        """
        state = self.state
        self._phase = match["phase"]
        state.epoch, state.epochs = int(match["epoch"]), int(match["epochs"])
        self._overall_total()
        if (
            match["phase"] == "Training"
            and match[0].endswith("completed")
            and state.steps_per_epoch
        ):
            state.step = max(state.step or 0, state.epoch * state.steps_per_epoch)

    def _rich_epoch_bar(self, match: re.Match[str]) -> None:
        """An epoch bar of speculators', printed as the epoch ends: its total is its steps."""
        if self._phase == "Training" and int(match["total"]) > 0:
            self.state.steps_per_epoch = int(match["total"])
            self._overall_total()

    def _tqdm(self, match: re.Match[str], description: str) -> None:
        state = self.state
        n, total = int(match["n"]), int(match["total"])
        remaining = _clock_seconds(match["remaining"])
        epoch = _EPOCH.search(description)
        if epoch is None:  # a bar over the whole run
            state.step, state.total_steps = n, total
            if remaining is not None and n < total:
                state.seconds_per_step = remaining / (total - n)
        else:
            self._epoch_bar(int(epoch[1]), n, total, remaining)
        postfix = {}
        for part in (match["rest"] or "").split(","):
            key, sep, value = part.strip().partition("=")
            if sep:
                postfix[key.strip()] = _number(value.strip().rstrip("s"))
        if postfix:
            self._metrics({k: v for k, v in postfix.items() if v is not None}, step=state.step)

    def _epoch_bar(self, bar_epoch: int, n: int, per_epoch: int, remaining: float | None) -> None:
        """A per-epoch bar: the overall step is where its epoch began plus its count."""
        state = self.state
        if state.epoch_step is not None and n < state.epoch_step:  # a new epoch's bar
            state.epoch_start_step = (state.epoch_start_step or 0) + (state.steps_per_epoch or 0)
        if state.epoch_start_step is None:
            state.epoch_start_step = bar_epoch * per_epoch
        state.epoch = bar_epoch + 1  # the bar counts epochs from 0; the eval lines, and we, from 1
        state.epoch_step, state.steps_per_epoch = n, per_epoch
        state.step = state.epoch_start_step + n
        if remaining is not None and n < per_epoch:  # the bar's time left is its epoch's
            state.seconds_per_step = remaining / (per_epoch - n)
        self._overall_total()

    def _overall_total(self) -> None:
        """The run's total steps, once the epochs and their length are known."""
        state = self.state
        if state.steps_per_epoch is not None and state.epochs is not None:
            state.total_steps = state.steps_per_epoch * state.epochs


_NOT_FINITE = re.compile(r"(?<![\w'\".])(nan|inf)(?![\w'\"])")
"""Python's repr of a NaN or an infinity, bare in a printed dict, which literal_eval refuses."""


def _literal(text: str) -> dict[str, Any]:
    if len(text) > MAX_DICT_CHARS:
        return {}
    try:  # `nan` and `inf` read as 1e999 (infinite): a diverged loss is seen, not the dict lost
        value = ast.literal_eval(_NOT_FINITE.sub("1e999", text.strip()))
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return {}
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int | None:
    """A count from 0, or None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{'train': {'loss': 1}}` as `{'train/loss': 1}`, as speculators' own filter flattens it."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and not prefix:
            flat |= _flat(value, f"{key}/")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _step_dict(line: str) -> tuple[int, str] | None:
    """(step, its metrics dict's text) from a `step N: {...}` line, or None."""
    text = line.rstrip()
    if not text.endswith("}") or (head := _STEP_HEAD.search(text)) is None:
        return None
    return int(head["step"]), text[head.end() - 1 :]


def _bar_description(line: str, bar: re.Match[str]) -> str:
    """What a tqdm bar describes: its line's text before the percentage, from the last `|` on."""
    return line[: bar.start()].rsplit("|", 1)[-1].strip().rstrip(":").strip()


def _clock_seconds(text: str) -> float | None:
    parts = text.strip().split(":")
    if not all(is_small_number(p) for p in parts) or not parts or parts == [""]:
        return None
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds
