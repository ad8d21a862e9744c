"""The advice a restart gets when its run heads past its budget: the projection and the flag.

The TUI's `R` modal and the headless `redeploy` both show it from here, so they say the same
thing; the TUI pre-fills the suggested command, and `redeploy --token-budget N` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol import JobInfo, Snapshot

BUDGET_FLAG = "--token-budget"


@dataclass(frozen=True, slots=True)
class BudgetAdvice:
    """A run projected past its budget, and the command that would stop it there."""

    dataset: str
    tokens: int
    projected_tokens: int | None
    overrun_tokens: int
    budget: int
    argv: tuple[str, ...]
    """The job's command with `--token-budget BUDGET` added."""

    def projection(self) -> str:
        """Where the run is heading, in numbers."""
        end = f"{self.projected_tokens:,}" if self.projected_tokens is not None else "?"
        return (
            f"{self.dataset} is projected to end at {end} tokens, {self.overrun_tokens:,} past "
            f"its budget of {self.budget:,} ({self.tokens:,} so far)."
        )

    def suggestion(self) -> str:
        """What to change, and what it does."""
        return (
            f"Suggested: it heads past its budget, so the command now ends with "
            f"{BUDGET_FLAG} {self.budget}: the runner stops at the budget."
        )


def budget_advice(job: JobInfo, snapshot: Snapshot | None) -> BudgetAdvice | None:
    """The advice for restarting `job`, or None when its dataset is not heading past a budget."""
    dataset = (
        next((d for d in snapshot.datasets if d.name == job.dataset), None) if snapshot else None
    )
    if dataset is None or dataset.budget is None or BUDGET_FLAG in job.argv:
        return None
    if not dataset.projected_overrun_tokens:
        return None
    argv = with_token_budget(job.argv, dataset.budget)
    return BudgetAdvice(
        dataset.name, dataset.tokens, dataset.projected_tokens,
        dataset.projected_overrun_tokens, dataset.budget, argv,
    )  # fmt: skip


def with_token_budget(argv: tuple[str, ...], tokens: int) -> tuple[str, ...]:
    """`argv` with `--token-budget tokens`: an existing value replaced, else the flag added."""
    parts = list(argv)
    for index, part in enumerate(parts):
        if part == BUDGET_FLAG and index + 1 < len(parts):
            parts[index + 1] = str(tokens)
            return tuple(parts)
        if part.startswith(BUDGET_FLAG + "="):
            parts[index] = f"{BUDGET_FLAG}={tokens}"
            return tuple(parts)
    return (*parts, BUDGET_FLAG, str(tokens))
