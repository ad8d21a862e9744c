"""The advice a restart gets when a budget applies to its run: where it heads, and the flag.

The TUI's `R` modal and the headless `redeploy` both show it from here, so they say the same
thing; the TUI pre-fills the suggested command, and `redeploy --token-budget N` applies it. It is
given whenever the dataset has a budget the command does not already stop at: before the first
response and while too few have come to project from, within the budget, heading past it, or already past it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol import JobInfo, Snapshot

BUDGET_FLAG = "--token-budget"


@dataclass(frozen=True, slots=True)
class BudgetAdvice:
    """A run under a budget its command does not stop at, and the command that would stop there."""

    dataset: str
    tokens: int
    projected_tokens: int | None
    """None while there are too few responses to project from."""
    overrun_tokens: int
    """How far past the budget the projection ends; 0 within it."""
    budget: int
    argv: tuple[str, ...]
    """The job's command with `--token-budget BUDGET` added."""

    def projection(self) -> str:
        """Where the run is heading, in numbers."""
        so_far = f"{self.tokens:,} so far"
        if self.projected_tokens is None:
            return (
                f"{self.dataset}: {self.tokens:,} tokens so far of its budget of {self.budget:,}; "
                "no projection yet (too few responses to project from)."
            )
        end = f"{self.projected_tokens:,}"
        if self.overrun_tokens:
            return (
                f"{self.dataset} is projected to end at {end} tokens, {self.overrun_tokens:,} "
                f"past its budget of {self.budget:,} ({so_far})."
            )
        return (
            f"{self.dataset} is projected to end at {end} tokens, within its budget of "
            f"{self.budget:,} ({so_far})."
        )

    def suggestion(self) -> str:
        """What to change, and what it does."""
        flag = f"{BUDGET_FLAG} {self.budget}"
        if self.tokens >= self.budget:
            return (
                f"Suggested: it is past its budget already, so the command now ends with {flag}: "
                "the restarted runner finds the budget met and exits at once, keeping every response."
            )
        if self.overrun_tokens:
            why = "it heads past its budget"
        else:
            why = "its command does not stop at its budget"
        return f"Suggested: {why}, so the command now ends with {flag}: the runner stops at the budget."


def budget_advice(job: JobInfo, snapshot: Snapshot | None) -> BudgetAdvice | None:
    """The advice for restarting `job`, or None when no budget applies or its command stops at it."""
    dataset = (
        next((d for d in snapshot.datasets if d.name == job.dataset), None) if snapshot else None
    )
    if dataset is None or dataset.budget is None or token_budget(job.argv) == dataset.budget:
        return None
    argv = with_token_budget(job.argv, dataset.budget)
    return BudgetAdvice(
        dataset.name, dataset.tokens, dataset.projected_tokens,
        dataset.projected_overrun_tokens or 0, dataset.budget, argv,
    )  # fmt: skip


def token_budget(argv: tuple[str, ...]) -> int | None:
    """The `--token-budget` a command sets (either spelling), or None when it sets none."""
    for index, part in enumerate(argv):
        value = argv[index + 1] if part == BUDGET_FLAG and index + 1 < len(argv) else None
        if part.startswith(BUDGET_FLAG + "="):
            value = part.partition("=")[2]
        if value is not None:
            return int(value.replace("_", "")) if value.replace("_", "").isdigit() else None
    return None


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
