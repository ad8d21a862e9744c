"""The speculative-decoding fields of one answer's meta_info, each checked on its own.

SGLang 0.5.23 adds them to a finished request's meta_info when its drafter ran a verify step
(srt/managers/tokenizer_manager.py ~3138-3201): `spec_accept_rate`, `spec_accept_length`
(completion_tokens / spec_verify_ct, ~3166-3168), `spec_num_correct_drafts`,
`spec_num_proposed_drafts`, `spec_verify_ct` and `spec_correct_drafts_histogram` (entry k: verify
steps that accepted k drafts, srt/managers/schedule_batch.py ~1566-1572). A field of the wrong
type, out of range or at odds with the others is left out: a missing figure, never an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from agent.datasets.response_lines import MAX_RESPONSE_TOKENS

MAX_ACCEPT_LENGTH = 256.0
"""Tokens per verify step: a drafter proposes a few dozen at most (--speculative-num-draft-tokens)."""
MAX_HISTOGRAM_BINS = 257
"""Accepted-draft counts 0 to 256: past any drafter's proposals."""


@dataclass(frozen=True, slots=True)
class SpecMeta:
    """What an answer says about its verify steps; None where it said nothing believable."""

    verify_ct: int | None = None
    accept_length: float | None = None
    correct_drafts: int | None = None
    proposed_drafts: int | None = None
    histogram: tuple[int, ...] | None = None


def spec_meta(meta: dict[str, Any]) -> SpecMeta | None:
    """The spec fields of a meta_info object, or None when it carries none to believe."""
    verify = _count(meta.get("spec_verify_ct"))
    verify = verify if verify else None
    correct, proposed = _drafts(meta)
    found = SpecMeta(
        verify_ct=verify,
        accept_length=_accept_length(meta.get("spec_accept_length")),
        correct_drafts=correct,
        proposed_drafts=proposed,
        histogram=_histogram(meta.get("spec_correct_drafts_histogram"), verify),
    )
    return None if found == SpecMeta() else found


def _count(value: Any) -> int | None:
    """A whole number of tokens or steps (a bool is not one)."""
    if type(value) is not int or not 0 <= value <= MAX_RESPONSE_TOKENS:
        return None
    return value


def _accept_length(value: Any) -> float | None:
    if type(value) not in (int, float) or not math.isfinite(value):
        return None
    return float(value) if 0 < value <= MAX_ACCEPT_LENGTH else None


def _drafts(meta: dict[str, Any]) -> tuple[int | None, int | None]:
    """Accepted and proposed drafts, both or neither: a rate needs the two."""
    correct = _count(meta.get("spec_num_correct_drafts"))
    proposed = _count(meta.get("spec_num_proposed_drafts"))
    if correct is None or not proposed or correct > proposed:
        return None, None
    return correct, proposed


def _histogram(value: Any, verify_ct: int | None) -> tuple[int, ...] | None:
    """Counts per accepted-draft number, adding up to the verify steps (one entry per step)."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_HISTOGRAM_BINS:
        return None
    counts = [_count(entry) for entry in value]
    if any(count is None for count in counts) or sum(value) != verify_ct:
        return None
    return tuple(value)
