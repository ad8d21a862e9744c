"""How a run ended, from what happened: the state and stop_reason runner.json says, and the exit code.

budget (met) and exhausted (no prompt left) exit 0; a signal 130; a run whose every request was
refused 2 (its config is wrong); any other failure 1, including a run that sent requests and kept
not one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.pipeline.inference.options import EXIT_FAILURE, EXIT_OK, EXIT_SIGNAL, EXIT_USAGE
from agent.pipeline.inference.status import RunStats


@dataclass(frozen=True)
class Ending:
    """The last state of a run (not stopped by a failed write, which is an error of its own)."""

    state: str
    stop_reason: str | None
    failure: str | None
    failure_reason: str
    exit_code: int


def how_it_ended(
    failure: tuple[str, str] | None,
    stop_reason: str | None,
    stats: RunStats,
    budget_reached: bool,
    errors_path: Path,
) -> Ending:
    """`failure` is the run's (message, reason) if it failed; `stop_reason` "signal" if stopped so."""
    if failure is None and stop_reason != "signal" and nothing_generated(stats):
        failure = (
            f"nothing could be generated: {stats.errors} prompt(s) failed (see {errors_path})",
            "nothing_generated",
        )
    if failure is not None:
        message, reason = failure
        code = EXIT_USAGE if reason == "rejected" else EXIT_FAILURE
        return Ending("failed", reason, message, reason, code)
    if stop_reason == "signal":
        return Ending("stopped", "signal", None, "", EXIT_SIGNAL)
    return Ending("stopped", "budget" if budget_reached else "exhausted", None, "", EXIT_OK)


def ending_words(end: Ending, stats: RunStats, tokens_done: int, budget: int | None) -> str:
    """The runner's last line for a run that did not fail: why it ended, and what it wrote."""
    why = {
        "budget": f"its token budget is met ({tokens_done:,} of {budget or 0:,} tokens)",
        "exhausted": "no prompt is left to answer",
        "signal": "stopped by a signal, the requests in flight drained or cancelled",
    }.get(end.stop_reason or "", end.stop_reason or "it stopped")
    return f"ended: {why}; {stats.completed:,} response(s) written this run"


def nothing_generated(stats: RunStats) -> bool:
    """Requests went out and not one answer came back to keep."""
    return stats.dispatched > 0 and stats.completed + stats.truncated == 0
