"""A closer look at one dataset: its latest responses, their lengths, and its errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.protocol.snapshot import ApiUsage


@dataclass(frozen=True, slots=True)
class DetailParams:
    """A closer look at dataset `name`: its `recent` latest responses and errors."""

    name: str
    recent: int = 20


@dataclass(frozen=True, slots=True)
class ResponseSummary:
    """One response, without its token ids."""

    id: str
    completion_tokens: int
    finish_reason: str
    latency_s: float | None


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """One prompt that failed."""

    id: str
    reason: str
    permanent: bool


@dataclass(frozen=True, slots=True)
class TokensAt:
    """A dataset's total tokens at one moment (the agent's clock), from its history."""

    ts: float
    tokens: int


@dataclass(frozen=True, slots=True)
class DatasetDetail:
    """The latest responses of a dataset, their finish reasons and lengths, and its errors."""

    name: str
    window_responses: int
    """How many recent responses the figures describe."""
    recent: tuple[ResponseSummary, ...]
    finish_reasons: dict[str, int]
    length_edges: tuple[int, ...]
    length_counts: tuple[int, ...]
    errors: tuple[ErrorSummary, ...]
    api_usage: ApiUsage | None = None
    """runner.json's tallies of an OpenAI-compatible backend: re-encoding, cost, rate limits."""
    tokens_over_time: tuple[TokensAt, ...] = ()
    """Total tokens over the last hours, oldest first, thinned to at most a few hundred points."""
    budget: int | None = None
    """The configured token budget, for the line the curve is drawn against."""
    generation: dict[str, str] = field(default_factory=dict)
    """How its last run generates, from runner.json: sampling, turns, reasoning, the template's
    arguments, each as short text; the settings a run left at their defaults are absent."""
