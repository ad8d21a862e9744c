"""vLLM's speculative-decoding figures from its counters: accept length, acceptance, per position.

vLLM 0.32 exports `vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
`..._num_accepted_tokens_total` and `..._num_accepted_tokens_per_pos_total{position}`, one series
per engine (v1/spec_decode/metrics.py ~229-275), and logs the figures it derives from them the
way they are derived here (~107-118): mean acceptance length = 1 + accepted / drafts (the bonus
token included), acceptance rate = accepted / draft tokens, a position's rate = its accepted /
drafts. Engines are summed: every data-parallel engine counts. Live figures are the counters'
change since the last reading of the same URL; before a second reading, or when no draft was made
between two, the server's whole life so far. No drafts counter: no drafter.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from agent.probes.prometheus import Sample
from agent.probes.values import is_small_number

DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
MAX_POSITIONS = 64
"""More draft positions than any server runs: past it, a series is not taken."""


@dataclass(frozen=True, slots=True)
class SpecCounters:
    """The counters summed over engines, at one reading."""

    drafts: float
    draft_tokens: float
    accepted: float
    per_position: tuple[float, ...]

    def minus(self, earlier: SpecCounters) -> SpecCounters:
        """What was counted since `earlier`."""
        positions = tuple(
            now - (earlier.per_position[i] if i < len(earlier.per_position) else 0.0)
            for i, now in enumerate(self.per_position)
        )
        return SpecCounters(self.drafts - earlier.drafts, self.draft_tokens - earlier.draft_tokens,
                            self.accepted - earlier.accepted, positions)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SpecFigures:
    """What the panel shows."""

    accept_length: float | None
    acceptance: float | None
    """Accepted draft tokens / draft tokens, 0-1."""
    per_position: tuple[float, ...]
    draft_tokens_per_step: int


_last: dict[str, SpecCounters] = {}
"""Per URL: the counters at its last reading."""


def spec_counters(samples: list[Sample]) -> SpecCounters | None:
    """The counters, summed over engines; None when the server makes no drafts (no drafter)."""
    sums: dict[str, float] = defaultdict(float)
    positions: dict[int, float] = defaultdict(float)
    for sample in samples:
        if sample.name == PER_POSITION:
            position = sample.labels.get("position", "")
            if is_small_number(position) and int(position) < MAX_POSITIONS:
                positions[int(position)] += sample.value
        elif sample.name in (DRAFTS, DRAFT_TOKENS, ACCEPTED):
            sums[sample.name] += sample.value
    if DRAFTS not in sums:
        return None
    if not all(math.isfinite(v) for v in (*sums.values(), *positions.values())):
        return None  # counters past what a float holds: no server counts so far
    per_position = tuple(positions.get(i, 0.0) for i in range(max(positions, default=-1) + 1))
    return SpecCounters(sums[DRAFTS], sums[DRAFT_TOKENS], sums[ACCEPTED], per_position)


def spec_figures(url: str, counters: SpecCounters) -> SpecFigures:
    """The figures since the last reading of `url` (or since the server started)."""
    earlier = _last.get(url)
    _last[url] = counters
    window = counters
    if earlier is not None and counters.drafts > earlier.drafts >= 0:
        window = counters.minus(earlier)
    return figures_of(window)


def figures_of(counted: SpecCounters) -> SpecFigures:
    """Accept length, acceptance and per-position rates of what `counted` counted."""
    drafts, tokens = counted.drafts, counted.draft_tokens
    sane = drafts > 0 and 0 <= counted.accepted <= tokens
    return SpecFigures(
        accept_length=round(1 + counted.accepted / drafts, 4) if sane else None,
        acceptance=round(counted.accepted / tokens, 4) if sane and tokens > 0 else None,
        per_position=tuple(round(min(1.0, max(0.0, n / drafts)), 4) for n in counted.per_position)
        if sane else (),
        draft_tokens_per_step=len(counted.per_position),
    )  # fmt: skip
