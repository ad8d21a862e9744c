"""A level's figures from its answers, the speedup against the baseline, and the verdict in words."""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent.pipeline.evaluate.measure import LevelRun
from agent.pipeline.evaluate.server_state import DecodeReading, FlushOutcome
from agent.pipeline.evaluate.spec_figures import (
    mean_accept_length,
    pooled_accept_rate,
    summed_histogram,
)

FASTER = 1.05
SLOWER = 0.95
"""Within these bounds the drafter is "no faster": noise, not a gain or a loss."""


@dataclass(frozen=True, slots=True)
class LevelConditions:
    """What surrounded one level on one server: the warm-up, the flush, the server's own count."""

    flush: FlushOutcome
    decode: DecodeReading
    warmup_requests: int = 0
    warmup_failed: int = 0


@dataclass(frozen=True, slots=True)
class ServerFigures:
    """One server at one level (definitions.py says what each accept figure follows)."""

    tokens_per_s: float
    latency_p50_s: float
    latency_p95_s: float
    ttft_p50_s: float | None
    accept_length: float | None
    requests: int
    failed: int
    first_error: str | None
    accept_length_decode_steps: float | None = None
    decode_steps_unavailable: str | None = None
    spec_accept_rate: float | None = None
    spec_correct_drafts_histogram: tuple[int, ...] | None = None
    spec_position_acceptance: tuple[float, ...] | None = None
    decode_steps_ranks: int = 1
    cache_flushed: bool = False
    flush_error: str | None = None
    warmup_requests: int = 0
    warmup_failed: int = 0


def figures(run: LevelRun, conditions: LevelConditions) -> ServerFigures:
    """What one level's answers add up to (failed requests count in no figure but `failed`)."""
    ok = [a for a in run.answers if a.error is None]
    specs = [a.spec for a in ok if a.spec is not None]
    ttfts = [a.ttft_s for a in ok if a.ttft_s is not None]
    latencies = [a.latency_s for a in ok]
    errors = [a.error for a in run.answers if a.error is not None]
    tokens = sum(a.completion_tokens for a in ok)
    decode = conditions.decode
    return ServerFigures(
        tokens_per_s=tokens / run.wall_s if run.wall_s > 0 else 0.0,
        latency_p50_s=percentile(latencies, 50), latency_p95_s=percentile(latencies, 95),
        ttft_p50_s=percentile(ttfts, 50) if ttfts else None,
        accept_length=decode.accept_length if decode.from_counters else mean_accept_length(specs),
        requests=len(run.answers), failed=len(errors), first_error=errors[0] if errors else None,
        accept_length_decode_steps=decode.accept_length,
        decode_steps_unavailable=decode.unavailable,
        spec_accept_rate=decode.acceptance if decode.from_counters else pooled_accept_rate(specs),
        spec_correct_drafts_histogram=summed_histogram(specs),
        spec_position_acceptance=decode.per_position or None, decode_steps_ranks=decode.ranks,
        cache_flushed=conditions.flush.flushed, flush_error=conditions.flush.error,
        warmup_requests=conditions.warmup_requests, warmup_failed=conditions.warmup_failed,
    )  # fmt: skip


def speedup(drafter: ServerFigures, baseline: ServerFigures | None) -> float | None:
    """tokens/s against the baseline's, rounded once (so a verdict's words and its figure agree)."""
    if baseline is None or not baseline.tokens_per_s:
        return None
    return round(drafter.tokens_per_s / baseline.tokens_per_s, 3)


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def verdict(levels: list[tuple[int, float | None, float | None]]) -> str:
    """In words, from (concurrency, speedup or None, accept length or None) per level."""
    if not levels:
        return "nothing measured"
    if all(speedup is None for _, speedup, _ in levels):
        concurrency, _, accept = levels[0]
        said = f"accept length {accept:.2f}" if accept else "no accept length reported"
        return f"{said} at concurrency {concurrency}; give --baseline to measure the speedup"
    measured = [(c, s) for c, s, _ in levels if s is not None]
    parts = [
        f"{s:.2f}× at {'concurrency ' if i == 0 else ''}{c}" for i, (c, s) in enumerate(measured)
    ]
    return f"{', '.join(parts)}: {_summary(measured)}"


def _summary(measured: list[tuple[int, float]]) -> str:
    slow = [c for c, s in measured if s < SLOWER]
    fast = [c for c, s in measured if s > FASTER]
    lowest, highest = measured[0][0], measured[-1][0]
    if len(slow) == len(measured):
        return "slower than no drafter at every level: it costs more than it saves"
    if len(fast) == len(measured):
        return "faster than no drafter at every level"
    if slow:
        return f"slower than no drafter at {'high' if highest in slow else 'low'} batch"
    if fast:
        return f"faster than no drafter only at {'low' if lowest in fast else 'high'} batch"
    return "no faster than no drafter"


def is_slower(levels: list[tuple[int, float | None, float | None]]) -> bool:
    """True when the drafter is slower than no drafter at some level."""
    return any(speedup is not None and speedup < SLOWER for _, speedup, _ in levels)
