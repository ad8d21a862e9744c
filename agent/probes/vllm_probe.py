"""A vLLM server, probed as what it is: /v1/models and `vllm:` metrics, one series per engine.

`/v1/models` names the served model and its `max_model_len` (vllm entrypoints/serve/engine/
protocol.py:105); `/metrics` has `vllm:num_requests_running`, `vllm:num_requests_waiting`, the
counter `vllm:generation_tokens_total` and the KV-cache share `vllm:kv_cache_usage_perc` (named
`vllm:gpu_cache_usage_perc` before; vllm 0.34.0 v1/metrics/loggers.py:528-545, 620, 798-809).
Every series carries `model_name` and `engine` labels, one per data-parallel engine
(loggers.py:499-505): the header sums them (the KV share is their mean) and `parts` shows each
engine, as the SGLang probe shows each DP rank. vLLM reports no throughput gauge, so tokens/s is
the counter's rate between two readings of the same URL (and engine); the first reading has
none. With a drafter, its counters give the accept length and acceptance (vllm_spec.py). Every
failure is a missing figure, never an exception.
"""

from __future__ import annotations

import time
from typing import Any

from agent.probes import prometheus
from agent.probes.http_reads import get_json, get_text
from agent.probes.values import count, figure, text
from agent.probes.vllm_spec import SpecFigures, spec_counters, spec_figures
from agent.protocol import ServerPart, ServerStats

KV_CACHE_NAMES = ("kv_cache_usage_perc", "gpu_cache_usage_perc")
"""vLLM's KV-cache share (1 = full): the current name, then the one before 0.34."""

_last_count: dict[str, tuple[float, float]] = {}
"""Per URL (and URL#engine): the generation-token counter and when it was read (monotonic)."""


async def probe_vllm(session: Any, url: str, healthy: bool, detail: str) -> ServerStats | None:
    """A reading of `url` as a vLLM server; None when /v1/models says it is not one."""
    _, models = await get_json(session, f"{url}/v1/models")
    data = models.get("data")
    entry = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
    if entry is None:
        return None
    samples = prometheus.parse(await get_text(session, f"{url}/metrics"), "vllm")
    total = prometheus.totals(samples)
    counters = spec_counters(samples)
    spec = spec_figures(url, counters) if counters is not None else None
    context = count(entry.get("max_model_len"))
    about = f"vLLM, max context {context:,} tokens" if context is not None else "vLLM"
    return ServerStats(
        url=url,
        healthy=healthy,
        detail=f"{detail}; {about}" if detail else about,
        model_path=text(entry.get("id")),
        running_requests=count(total.get("num_requests_running")),
        queued_requests=count(total.get("num_requests_waiting")),
        token_usage=kv_cache_usage(total),
        gen_throughput_tokens_per_s=generation_rate(url, total.get("generation_tokens_total")),
        parts=engine_parts(url, samples),
        speculative_algorithm=_method(spec),
        accept_length=spec.accept_length if spec else None,
        acceptance=spec.acceptance if spec else None,
        position_acceptance=spec.per_position if spec else (),
    )


def _method(spec: SpecFigures | None) -> str | None:
    """What the counters show of the drafter: vLLM says its method only in dev mode."""
    if spec is None:
        return None
    steps = spec.draft_tokens_per_step
    return (
        f"vLLM speculative decoding, {steps} draft tokens" if steps else "vLLM speculative decoding"
    )


def kv_cache_usage(figures: dict[str, float]) -> float | None:
    """The KV-cache share under whichever name this vLLM uses."""
    return next((figure(figures[name]) for name in KV_CACHE_NAMES if name in figures), None)


def engine_parts(url: str, samples: list[prometheus.Sample]) -> tuple[ServerPart, ...]:
    """Per-engine figures, when the metrics have more than one engine (vLLM's --data-parallel-size)."""
    engines = prometheus.by_part(samples, "engine")
    if len(engines) < 2:
        return ()
    return tuple(
        ServerPart(
            name=f"engine {engine}",
            running_requests=count(figures.get("num_requests_running")),
            queued_requests=count(figures.get("num_requests_waiting")),
            gen_throughput_tokens_per_s=generation_rate(
                f"{url}#{engine}", figures.get("generation_tokens_total")
            ),
            token_usage=kv_cache_usage(figures),
        )
        for engine, figures in engines.items()
    )


def generation_rate(url: str, count: float | None, now: float | None = None) -> float | None:
    """Tokens/s since the last reading of `url`'s counter; None at first or after a restart."""
    if count is None:
        return None
    now = time.monotonic() if now is None else now
    previous = _last_count.get(url)
    _last_count[url] = (count, now)
    if previous is None or count < previous[0] or now <= previous[1]:
        return None
    return round((count - previous[0]) / (now - previous[1]), 2)
