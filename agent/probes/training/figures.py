"""The figures of one split of a training run (train or eval), from the metric names trainers log.

SpecForge 0.2.0 logs `acc_i` (how often draft position i was right), `acc`, `loss`,
`acceptance_rate[_i]`, `lr` and `perf/*`; its evaluator `eval/avg_loss`, `eval/avg_acc`,
`eval/per_position_acc` (a list, or `/i` keys behind an external tracker) and
`eval/acceptance_rate_i`. speculators 0.9.0 logs `loss`, `full_acc_i` (right at positions 0..i
all at once) and, for validation, the same names ending in `_epoch`. A name it does not know is
skipped, never guessed at.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

HISTORY = 240

_POSITION = re.compile(
    r"^(?P<name>acc|full_acc|per_position_acc|acceptance_rate)[_/](?P<pos>\d{1,3})$"
)
_LOSS_NAMES = frozenset({"loss", "avg_loss"})
_ACCURACY_NAMES = frozenset({"acc", "avg_acc"})
EVAL_PREFIXES = ("eval/", "val/")


@dataclass
class Figures:
    """Loss, accuracy and acceptance of one split, as last logged."""

    step: int | None = None
    loss: float | None = None
    accuracy: float | None = None
    accuracy_by_position: dict[int, float] = field(default_factory=dict)
    cumulative: bool = False
    """Position i's accuracy already requires positions 0..i-1 right too (speculators'
    full_acc_i); otherwise each position's is on its own and they chain (SpecForge's acc_i)."""
    acceptance_rate: float | None = None
    acceptance_rate_by_position: dict[int, float] = field(default_factory=dict)
    loss_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    acceptance_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    loss_not_finite: bool = False
    """The latest complete record's loss was NaN or infinite: the run has diverged."""
    zero_records: int = 0
    """Complete records in a row, the latest among them, whose loss or accuracy was exactly 0."""
    _not_finite_now: bool = False

    def note_history(self) -> None:
        """A record is complete: keep its loss and acceptance length, and what it says is wrong."""
        self.loss_not_finite, self._not_finite_now = self._not_finite_now, False
        if self.loss is not None and not self.loss_not_finite:
            self.loss_history.append(self.loss)
        if (length := self.acceptance_length) is not None:
            self.acceptance_history.append(length)
        at_zero = 0.0 in (self.loss, self.accuracy) and not self.loss_not_finite
        self.zero_records = self.zero_records + 1 if at_zero else 0

    def loss_is_not_finite(self) -> None:
        """The record being read logs a NaN or infinite loss (kept apart: it is no figure)."""
        self._not_finite_now = True

    @property
    def acceptance_length(self) -> float | None:
        """Expected tokens per draft: 1 + the chance that positions 0..k are all right, summed."""
        if not self.accuracy_by_position:
            return None
        total, chain = 1.0, 1.0
        for position in sorted(self.accuracy_by_position):
            value = self.accuracy_by_position[position]
            chain = value if self.cumulative else chain * value
            total += chain
        return total

    @property
    def mean_acceptance_rate(self) -> float | None:
        """The logged rate, else the mean over positions (as SpecForge forms its own)."""
        rates = self.acceptance_rate_by_position
        if self.acceptance_rate is not None or not rates:
            return self.acceptance_rate
        return sum(rates.values()) / len(rates)


def split_of(key: str) -> tuple[str, str]:
    """("eval", name) for an evaluation key, else ("train", name), the prefix taken off."""
    for prefix in EVAL_PREFIXES:
        if key.startswith(prefix):
            name = key[len(prefix) :]
            return "eval", name.removesuffix("_epoch") if prefix == "val/" else name
    return "train", key.removeprefix("train/")


def number(value: Any) -> float | None:
    """A finite number, or None (a bool, a string, NaN or infinity is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def take(figures: Figures, name: str, value: Any) -> bool:
    """Record one metric in `figures`; False when the name is not one of a split's figures."""
    if name == "per_position_acc" and isinstance(value, list):
        return any([take(figures, f"acc_{i}", item) for i, item in enumerate(value[:64])])
    if name in _LOSS_NAMES and isinstance(value, float) and not math.isfinite(value):
        figures.loss_is_not_finite()  # `nan` or `inf` as the trainer printed it: it diverged
        return True
    if (amount := number(value)) is None:
        return False
    if name in _LOSS_NAMES:
        figures.loss = amount
        return True
    if (share_of := share(amount)) is None:  # acc = 1e308 was once the best evaluation, for good
        return False
    if (match := _POSITION.match(name)) is not None:
        _take_position(figures, match["name"], int(match["pos"]), share_of)
    elif name in _ACCURACY_NAMES:
        figures.accuracy = share_of
    elif name == "acceptance_rate":
        figures.acceptance_rate = share_of
    else:
        return False
    return True


def share(value: float | None) -> float | None:
    """An accuracy or a rate: from 0 to 1, else no reading."""
    return value if value is not None and 0.0 <= value <= 1.0 else None


def _take_position(figures: Figures, name: str, position: int, amount: float) -> None:
    if name == "acceptance_rate":
        figures.acceptance_rate_by_position[position] = amount
        return
    figures.cumulative = name == "full_acc"
    figures.accuracy_by_position[position] = amount
