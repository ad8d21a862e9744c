"""Answers cut at max_new_tokens as a person reads them: `cut 12%` in a row, a line in the detail.

Pure functions, no Textual. The share is the agent's count over its responses; whether it is too
high is the agent's call (its truncation_high alert), never worked out again here.
"""

from __future__ import annotations

from agent.protocol import DatasetProgress

TRUNCATION_HIGH = "truncation_high"
"""The kind of the agent's alert for a dataset with too many answers cut."""


def cut_text(progress: DatasetProgress) -> str:
    """`cut 12%` (`cut <1%` for a few), or "" when no answer was cut."""
    share = progress.truncated_share
    if not progress.truncated_responses or share is None:
        return ""
    return "cut <1%" if share < 0.01 else f"cut {share:.0%}"


def truncation_line(progress: DatasetProgress | None) -> str | None:
    """`truncated: 123 of 1,000 (12.3 %) at max_new_tokens 4096`, or None when none was cut."""
    if progress is None or not progress.truncated_responses or not progress.answers:
        return None
    cut, responses = progress.truncated_responses, progress.answers
    cap = progress.max_new_tokens
    at = f" at max_new_tokens {cap}" if cap is not None else " at max_new_tokens"
    return f"truncated: {cut:,} of {responses:,} ({cut / responses * 100:.1f} %){at}"
