"""A level's speculative-decoding figures from its answers' meta_info (definitions.py says whose).

Each figure is taken over the answers that carry its field; with none it is None.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.pipeline.evaluate.spec_meta import SpecMeta


def mean_accept_length(specs: Sequence[SpecMeta]) -> float | None:
    """The plain mean of the per-request accept lengths, as SpecForge's benchmark takes it."""
    lengths = [spec.accept_length for spec in specs if spec.accept_length is not None]
    return sum(lengths) / len(lengths) if lengths else None


def pooled_accept_rate(specs: Sequence[SpecMeta]) -> float | None:
    """Accepted drafts over proposed drafts, summed over the requests."""
    correct = proposed = 0
    for spec in specs:
        if spec.correct_drafts is not None and spec.proposed_drafts:
            correct += spec.correct_drafts
            proposed += spec.proposed_drafts
    return correct / proposed if proposed else None


def summed_histogram(specs: Sequence[SpecMeta]) -> tuple[int, ...] | None:
    """Verify steps per accepted-draft count, added up over the requests."""
    histograms = [spec.histogram for spec in specs if spec.histogram is not None]
    if not histograms:
        return None
    total = [0] * max(len(h) for h in histograms)
    for histogram in histograms:
        for accepted, steps in enumerate(histogram):
            total[accepted] += steps
    return tuple(total)
