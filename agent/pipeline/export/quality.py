"""The checks every exported answer goes through, and their counts per dataset.

- finish reason, as the runner (or any script) wrote it; `length` is a length-capped answer;
- empty: no token but special ones (an end-of-turn alone);
- reasoning: opened (by the template's generation prompt or by the model) and closed with the
  think-end marker, or left open, when the tokenizer has think markers;
- looping: the last LOOP_TAIL tokens are a repeated n-gram (n up to LOOP_MAX_PERIOD): at least
  LOOP_SHARE of them equal the token n places before.
Checks run on one numpy parse of the ids and a byte search: tens of microseconds per answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.pipeline.export.marks import TokenFacts

LOOP_TAIL = 512
LOOP_MIN_TOKENS = 64
LOOP_MAX_PERIOD = 64
LOOP_SHARE = 0.9
LENGTH_EDGES = (0, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
"""Lower edges of the length histogram's bins (the last bin has no upper edge)."""
DROP_POLICIES = ("truncated", "unclosed", "looping", "empty")


@dataclass(frozen=True, slots=True)
class AnswerChecks:
    """What the checks found in one answer."""

    finish: str
    truncated: bool
    empty: bool
    looping: bool
    reasoning: str
    """none (no reasoning opened), closed, unclosed, or n/a (the tokenizer has no marker)."""

    def failed(self, policies: frozenset[str]) -> list[str]:
        """The `--drop` policies this answer falls under."""
        hits = {
            "truncated": self.truncated,
            "unclosed": self.reasoning == "unclosed",
            "looping": self.looping,
            "empty": self.empty,
        }
        return [name for name in DROP_POLICIES if name in policies and hits[name]]


class AnswerChecker:
    """The checks, with the tokenizer's facts worked out once.

    The ids are parsed once, by numpy, from the text the responses file holds (`5,6,7`); the
    think markers are found in that text by a byte search.
    """

    def __init__(self, facts: TokenFacts) -> None:
        import numpy as np

        self.facts = facts
        self._special = np.zeros(max(facts.special_ids, default=-1) + 1, dtype=bool)
        self._special[sorted(facts.special_ids)] = True
        """A lookup table: is id i special (ids past its end are not)."""
        self._start = b",%d," % facts.think_start if facts.think_start is not None else None
        self._end = b",%d," % facts.think_end if facts.think_end is not None else None

    def check(self, ids_text: bytes, ids: Any, finish: str, prompt_opens: bool) -> AnswerChecks:
        """Check one answer: `ids_text` its output ids as `5,6,7`, `ids` the same as numbers."""
        content = ids[~self._is_special(ids)]
        return AnswerChecks(
            finish=finish,
            truncated=finish == "length",
            empty=len(content) == 0,
            looping=is_looping(content[-LOOP_TAIL:]),
            reasoning=self._reasoning(b"," + ids_text + b",", prompt_opens),
        )

    def beyond_vocab(self, ids: Any) -> int | None:
        """The largest id when it is not below the tokenizer's size (a corrupt answer), else None."""
        size = self.facts.vocab_size
        if not size or not len(ids):
            return None
        largest = int(ids.max())
        return largest if largest >= size else None

    def _is_special(self, ids: Any) -> Any:
        """A boolean array: which of `ids` are special."""
        import numpy as np

        flags = np.zeros(len(ids), dtype=bool)
        known = ids < len(self._special)
        flags[known] = self._special[ids[known]]
        return flags

    def _reasoning(self, padded: bytes, prompt_opens: bool) -> str:
        if self._start is None or self._end is None:
            return "n/a"
        started = padded.rfind(self._start)
        if not prompt_opens and started < 0:
            return "none"
        ended = padded.rfind(self._end)
        return "closed" if ended > started else "unclosed"


def numbers(text: bytes) -> Any:
    """The ids of `5,6,7` as a numpy int64 array (about 30M ids/s)."""
    import numpy as np

    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.fromstring(text, dtype=np.int64, sep=",")


def is_looping(ids: Any) -> bool:
    """True when the answer's tail is one n-gram repeated (see the module's docstring)."""
    import numpy as np

    if len(ids) < LOOP_MIN_TOKENS:
        return False
    tail = ids[-LOOP_TAIL:]
    if len(set(tail.tolist())) > LOOP_MAX_PERIOD + len(tail) * (1 - LOOP_SHARE):
        return False  # too many distinct tokens for any repeated n-gram to cover the tail
    for period in range(1, min(LOOP_MAX_PERIOD, len(tail) // 2) + 1):
        if float(np.mean(tail[period:] == tail[:-period])) >= LOOP_SHARE:
            return True
    return False


@dataclass
class QualityTally:
    """One dataset's counts, as quality.json reports them."""

    answers: int = 0
    tokens: int = 0
    finish_reasons: dict[str, int] = field(default_factory=dict)
    truncated: int = 0
    empty: int = 0
    looping: int = 0
    reasoning: dict[str, int] = field(default_factory=dict)
    length_counts: list[int] = field(default_factory=lambda: [0] * len(LENGTH_EDGES))
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_answers: int = 0
    looping_examples: list[str] = field(default_factory=list)

    def add(self, checks: AnswerChecks, tokens: int, answer_id: str, drops: list[str]) -> None:
        """Count one answer and the policies that drop it."""
        self.answers += 1
        self.tokens += tokens
        self.finish_reasons[checks.finish] = self.finish_reasons.get(checks.finish, 0) + 1
        self.truncated += checks.truncated
        self.empty += checks.empty
        self.looping += checks.looping
        if checks.looping and len(self.looping_examples) < 5:
            self.looping_examples.append(answer_id)
        self.reasoning[checks.reasoning] = self.reasoning.get(checks.reasoning, 0) + 1
        self.length_counts[_bin(tokens)] += 1
        for name in drops:
            self.dropped[name] = self.dropped.get(name, 0) + 1
        self.dropped_answers += bool(drops)


def _bin(tokens: int) -> int:
    index = 0
    while index + 1 < len(LENGTH_EDGES) and tokens >= LENGTH_EDGES[index + 1]:
        index += 1
    return index
