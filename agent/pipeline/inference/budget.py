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

    Two Fenwick trees over the length value, kept sparse (a node exists once a length under it
    was added), so adding a length and asking are O(log n) in time and memory whatever the
    lengths are: a response of 2**22 tokens costs 23 nodes, not a table of 2**22 (where
    growing the table froze the runner's loop for 15 s and a negative length never ended).
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = 1 << max(size - 1, 0).bit_length()
        """Lengths below this are covered; it doubles, at O(1) each time, as longer ones come."""
        self._counts: dict[int, int] = {}
        self._sums: dict[int, int] = {}
        self.count = 0
        self.total = 0

    def add(self, length: int) -> None:
        """Count one response of `length` tokens; ValueError for a length that is no count."""
        if type(length) is not int or length < 0:
            raise ValueError(f"a response length of {length!r} tokens is not a count")
        while length >= self._size:
            self._double()
        index = length + 1
        while index <= self._size:
            self._counts[index] = self._counts.get(index, 0) + 1
            self._sums[index] = self._sums.get(index, 0) + length
            index += index & -index
        self.count += 1
        self.total += length

    def longer_than(self, length: int) -> tuple[int, int]:
        """(how many, total tokens) of the responses longer than `length`."""
        if length >= self._size:
            return 0, 0
        count, total = self._prefix(max(length, -1))
        return self.count - count, self.total - total

    def _prefix(self, length: int) -> tuple[int, int]:
        index, count, total = length + 1, 0, 0
        while index > 0:
            count += self._counts.get(index, 0)
            total += self._sums.get(index, 0)
            index -= index & -index
        return count, total

    def _double(self) -> None:
        """Cover twice the lengths: the one new node that spans them all holds everything so far."""
        self._size *= 2
        self._counts[self._size] = self.count
        self._sums[self._size] = self.total
