"""The budget gate: may one more request go out without the run overshooting its budget?

The expected length of a request is the mean completion length seen so far (resumed responses
included), or `max_new_tokens` before any is seen. One more request is sent while the tokens done
plus the expected length of everything in flight, itself included, stays within half a response
of the budget, so the final total lands on the budget on average. A completion that comes in
short makes room again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BudgetGate:
    """Counts tokens and decides on dispatch; no I/O, no clock."""

    budget: int | None
    prior_tokens: float
    """Expected length before any response has been seen."""
    tokens_done: int = 0
    responses_done: int = 0
    in_flight: int = 0

    @property
    def expected_tokens(self) -> float:
        """Mean completion tokens per response."""
        if self.responses_done == 0:
            return self.prior_tokens
        return self.tokens_done / self.responses_done

    @property
    def projected_tokens(self) -> float:
        """Tokens done plus what the requests in flight are expected to add."""
        return self.tokens_done + self.in_flight * self.expected_tokens

    @property
    def reached(self) -> bool:
        """True once the tokens done meet the budget."""
        return self.budget is not None and self.tokens_done >= self.budget

    def may_dispatch(self) -> bool:
        """True if one more request fits in the budget."""
        if self.budget is None:
            return True
        if self.reached:
            return False
        mean = self.expected_tokens
        return self.projected_tokens + mean / 2 < self.budget

    def record(self, tokens: int) -> None:
        """A response was kept."""
        self.tokens_done += tokens
        self.responses_done += 1
