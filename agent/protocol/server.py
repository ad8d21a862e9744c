"""The SGLang server and the GPUs as the agent's probes see them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

KeyProblem = Literal["refused", "missing", "unreadable"]
"""Why the server turned the probes away (HTTP 401 or 403 on /server_info): the key sent was
refused, no key was configured, or the configured key file could not be read."""


SERVER_STARTING_GRACE_S = 600.0
"""A server job this young that does not answer yet is loading its model: starting, not down."""


@dataclass(frozen=True, slots=True)
class ServerPart:
    """One DP rank of a server, or one worker behind an sglang-router."""

    name: str
    """DP0, DP1, ... or the worker's URL."""
    healthy: bool | None = None
    load: int | None = None
    """The router's count of requests it has in flight on this worker."""
    running_requests: int | None = None
    queued_requests: int | None = None
    gen_throughput_tokens_per_s: float | None = None
    token_usage: float | None = None


@dataclass(frozen=True, slots=True)
class ServerStats:
    """The SGLang server: health, model and load, from HTTP probes and its log.

    Figures are whole-server: summed over DP ranks (and over workers behind a router), or
    averaged for ratios such as token_usage; `parts` has them per rank or per worker.
    """

    url: str | None
    healthy: bool | None
    """None when it could not be asked."""
    detail: str = ""
    model_path: str | None = None
    speculative_algorithm: str | None = None
    max_running_requests: int | None = None
    running_requests: int | None = None
    queued_requests: int | None = None
    token_usage: float | None = None
    gen_throughput_tokens_per_s: float | None = None
    cache_hit_rate: float | None = None
    accept_length: float | None = None
    acceptance: float | None = None
    """Accepted draft tokens / draft tokens (0-1), where the server counts them (vLLM)."""
    position_acceptance: tuple[float, ...] = ()
    """Per draft position, the share of drafts whose token there was accepted (vLLM)."""
    log_stats: dict[str, str] = field(default_factory=dict)
    """The fields of the last Decode batch line of the server log, summed over DP ranks."""
    probed_at: float = 0.0
    is_router: bool = False
    """The URL is an sglang-router; `parts` are its workers."""
    healthy_workers: int | None = None
    total_workers: int | None = None
    parts: tuple[ServerPart, ...] = ()
    hosted: bool = False
    """A hosted API (the config's `api` is openai-* and it has no vLLM metrics): no load figures;
    the console shows its rate limits and spend from the datasets instead."""
    down_since: float | None = None
    """Epoch seconds of the first probe that found it down, since it was last up; None while up."""
    key_problem: KeyProblem | None = None
    """The server wants a key the probes did not have right (its `detail` says which and what to
    do); None when no key trouble was seen. Jobs that talk to it fail the same way."""


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU as nvidia-smi reports it, and the pids holding memory on it."""

    index: int
    name: str
    utilization_pct: float | None
    memory_used_mib: float | None
    memory_total_mib: float | None
    temperature_c: float | None
    power_w: float | None
    pids: tuple[int, ...] = ()
    job_ids: tuple[str, ...] = ()
    """The agent's jobs among the holders."""
