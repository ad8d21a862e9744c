"""The one rule for when a dataset's generation is done, shared by runner, agent and console."""

from __future__ import annotations


def generation_done(tokens: int, budget: int | None, prompts_left: int) -> bool:
    """The one rule for "done with its budget": its tokens reach the budget, or no prompt is left.

    The runner ends a run by it, the agent calls a dataset complete by it, and the console's
    pipeline view and g/G start generation by it; a run that stops under its budget with prompts
    left is not done, so the next one must make progress.
    """
    return prompts_left <= 0 or (budget is not None and tokens >= budget)
