"""SGLang over HTTP: health, server and model info (old and new paths), and /metrics.

aiohttp is imported here, lazily: it is present wherever SGLang is, but the agent core must not
need it. Every failure is a reading that says what failed, never an exception to the daemon.
"""

from __future__ import annotations

import re
from typing import Any

from agent.protocol import ServerStats

TIMEOUT_S = 5.0
_METRIC = re.compile(r"^(sglang:[a-z_]+)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN)$", re.M)


async def probe_sglang(url: str) -> ServerStats:
    """One reading of the server at `url`."""
    try:
        import aiohttp
    except ImportError:
        return ServerStats(url=url, healthy=None, detail="aiohttp is not installed for this python")
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        try:
            healthy, detail = await _health(session, url)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return ServerStats(
                url=url, healthy=False, detail=f"unreachable: {str(exc) or type(exc).__name__}"
            )
        info = await _first_json(session, url, ("/get_server_info", "/server_info"))
        model = await _first_json(session, url, ("/get_model_info", "/model_info"))
        metrics = await _metrics(session, url)
    return ServerStats(
        url=url, healthy=healthy, detail=detail,
        model_path=str(model.get("model_path") or info.get("model_path") or "") or None,
        speculative_algorithm=info.get("speculative_algorithm"),
        max_running_requests=_int(info.get("max_running_requests")),
        running_requests=_int(metrics.get("sglang:num_running_reqs")),
        queued_requests=_int(metrics.get("sglang:num_queue_reqs")),
        token_usage=metrics.get("sglang:token_usage"),
        gen_throughput_tokens_per_s=metrics.get("sglang:gen_throughput"),
        cache_hit_rate=metrics.get("sglang:cache_hit_rate"),
        accept_length=metrics.get("sglang:spec_accept_length"),
    )  # fmt: skip


async def _health(session: Any, url: str) -> tuple[bool, str]:
    async with session.get(f"{url}/health") as response:
        return response.status == 200, f"/health answered HTTP {response.status}"


async def _first_json(session: Any, url: str, paths: tuple[str, ...]) -> dict[str, Any]:
    for path in paths:
        try:
            async with session.get(url + path) as response:
                if response.status == 200:
                    body = await response.json(content_type=None)
                    return body if isinstance(body, dict) else {}
        except Exception:  # a failed probe is a missing field, not a crash
            continue
    return {}


async def _metrics(session: Any, url: str) -> dict[str, float]:
    try:
        async with session.get(f"{url}/metrics") as response:
            if response.status != 200:
                return {}
            text = await response.text()
    except Exception:  # metrics are optional (--enable-metrics)
        return {}
    return {name: float(value) for name, value in _METRIC.findall(text)}


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
