"""The budget gate: may one more request go out without the run overshooting its budget?

A new request is expected to be as long as the mean response so far (resumed ones included), or
`max_new_tokens` before any is seen. A request already in flight is not: the short ones finish
first, so the ones still running near the end are the long ones. For each, the gate estimates
the tokens it has made (its age times the per-request decode rate seen in recent completions)
and expects the mean length of the responses seen that were longer than that. One more request
goes out while the tokens done plus everything expected, the new one included, stays within half
a response of the budget. A completion that comes in short makes room again, and while the
tokens done are under the budget with nothing in flight one more request always goes out: a run
ends at its budget or when its prompts run out, never a few tokens short of it (the rule of
`agent.protocol.generation_done`). With `--on-budget cancel` the gate keeps every slot busy until
the budget is met instead, since whatever is still running then is cut off anyway.

Pure arithmetic: the caller passes the clock.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

RATE_WINDOW = 16
"""Recent completions that set the per-request decode rate."""
BEYOND_SEEN = 1.25
"""A request already longer than every response seen is expected to run this much further."""


@dataclass
class BudgetGate:
    """Counts tokens and decides on dispatch."""

    budget: int | None
    prior_tokens: float
    """Expected length before any response has been seen."""
    keep_full: bool = False
    """--on-budget cancel: keep every slot busy until the budget is met, then the rest is cut."""
    tokens_done: int = 0
    responses_done: int = 0
    started_at: dict[object, float] = field(default_factory=dict)
    """When each request in flight was sent, by the caller's key."""
    _lengths: LengthIndex = field(default_factory=lambda: LengthIndex())
    _recent: collections.deque[tuple[int, float]] = field(
        default_factory=lambda: collections.deque(maxlen=RATE_WINDOW)
    )

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return len(self.started_at)

    @property
    def expected_tokens(self) -> float:
        """Mean completion tokens per response."""
        if self.responses_done == 0:
            return self.prior_tokens
        return self.tokens_done / self.responses_done

    @property
    def reached(self) -> bool:
        """True once the tokens done meet the budget."""
        return self.budget is not None and self.tokens_done >= self.budget

    def resume(self, lengths: list[int]) -> None:
        """Count responses an earlier run left."""
        for tokens in lengths:
            self._count(tokens)

    def sent(self, key: object, now: float) -> None:
        """A request went out."""
        self.started_at[key] = now

    def answered(self, key: object, tokens: int | None, now: float) -> None:
        """A request came back; `tokens` is None when nothing was kept (error, abort, drop)."""
        started = self.started_at.pop(key, now)
        if tokens is not None:
            self._count(tokens)
            if now > started:
                self._recent.append((tokens, now - started))

    def projected_tokens(self, now: float) -> float:
        """Tokens done plus what the requests in flight are expected to add."""
        return self.tokens_done + sum(
            self._expected_final(now - t) for t in self.started_at.values()
        )

    def may_dispatch(self, now: float) -> bool:
        """True if one more request fits in the budget."""
        if self.budget is None:
            return True
        if self.reached or self.keep_full:
            return not self.reached
        if self.in_flight == 0:
            return True  # under the budget with nothing coming: a run ends at it, never short
        mean = self.expected_tokens
        if self.tokens_done + (self.in_flight + 1) * self.prior_tokens < self.budget:
            return True  # even if everything ran to max_new_tokens, no need to look closer
        return self.projected_tokens(now) + mean < self.budget + mean / 2

    def _count(self, tokens: int) -> None:
        self.tokens_done += tokens
        self.responses_done += 1
        self._lengths.add(tokens)

    def _expected_final(self, age_s: float) -> float:
        made = age_s * self._rate()
        if self.responses_done == 0:
            return max(self.prior_tokens, made)
        count, total = self._lengths.longer_than(int(made))
        return total / count if count else made * BEYOND_SEEN

    def _rate(self) -> float:
        tokens = sum(t for t, _ in self._recent)
        seconds = sum(s for _, s in self._recent)
        return tokens / seconds if seconds > 0 else 0.0


class LengthIndex:
    """Counts and sums of response lengths: how many, and how long, were longer than n.

    Two Fenwick trees over the length value, so adding a length and asking are O(log n) however
    many responses a dataset has.
    """

    def __init__(self, size: int = 1024) -> None:
        self._counts = [0] * (size + 1)
        self._sums = [0] * (size + 1)
        self.count = 0
        self.total = 0

    def add(self, length: int) -> None:
        """Count one response of `length` tokens."""
        while length >= len(self._counts) - 1:
            self._grow()
        self._update(length, 1)
        self.count += 1
        self.total += length

    def longer_than(self, length: int) -> tuple[int, int]:
        """(how many, total tokens) of the responses longer than `length`."""
        if length >= len(self._counts) - 1:
            return 0, 0
        count, total = self._prefix(max(length, -1))
        return self.count - count, self.total - total

    def _update(self, length: int, count: int) -> None:
        index = length + 1
        while index < len(self._counts):
            self._counts[index] += count
            self._sums[index] += length * count
            index += index & -index

    def _prefix(self, length: int) -> tuple[int, int]:
        index, count, total = length + 1, 0, 0
        while index > 0:
            count += self._counts[index]
            total += self._sums[index]
            index -= index & -index
        return count, total

    def _grow(self) -> None:
        lengths = [(value, n) for value, n in self._histogram() if n]
        size = 2 * (len(self._counts) - 1)
        self._counts = [0] * (size + 1)
        self._sums = [0] * (size + 1)
        for value, n in lengths:
            self._update(value, n)

    def _histogram(self) -> list[tuple[int, int]]:
        previous = 0
        histogram = []
        for value in range(len(self._counts) - 1):
            count = self._prefix(value)[0]
            histogram.append((value, count - previous))
            previous = count
        return histogram
