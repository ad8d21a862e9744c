"""A vLLM server, probed as what it is: no /server_info, but /v1/models and `vllm:` metrics.

`/v1/models` names the served model and its `max_model_len` (vllm entrypoints/serve/engine/
protocol.py:105); `/metrics` has `vllm:num_requests_running`, `vllm:num_requests_waiting` and the
counter `vllm:generation_tokens_total` (v1/metrics/loggers.py:528-809; openai-compat-wire.md §1).
vLLM reports no throughput gauge, so tokens/s is the counter's rate between two readings of the
same URL; the first reading has none. Every failure is a missing figure, never an exception.
"""

from __future__ import annotations

import time
from typing import Any

from agent.probes import prometheus
from agent.probes.http_reads import get_json, get_text
from agent.probes.values import count, text
from agent.protocol import ServerStats

_last_count: dict[str, tuple[float, float]] = {}
"""Per URL: the generation-token counter and when it was read (monotonic), for the rate."""


async def probe_vllm(session: Any, url: str, healthy: bool, detail: str) -> ServerStats | None:
    """A reading of `url` as a vLLM server; None when /v1/models says it is not one."""
    _, models = await get_json(session, f"{url}/v1/models")
    data = models.get("data")
    entry = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
    if entry is None:
        return None
    total = prometheus.totals(prometheus.parse(await get_text(session, f"{url}/metrics"), "vllm"))
    context = count(entry.get("max_model_len"))
    about = f"vLLM, max context {context:,} tokens" if context is not None else "vLLM"
    return ServerStats(
        url=url,
        healthy=healthy,
        detail=f"{detail}; {about}" if detail else about,
        model_path=text(entry.get("id")),
        running_requests=count(total.get("num_requests_running")),
        queued_requests=count(total.get("num_requests_waiting")),
        gen_throughput_tokens_per_s=generation_rate(url, total.get("generation_tokens_total")),
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
