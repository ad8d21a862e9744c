"""An OpenAI-compatible server, probed as the config says it is: vLLM, or a hosted API.

A vLLM server has `/health` and Prometheus `vllm:` metrics (vllm_probe.py reads them). A hosted
API (OpenRouter and the like) has neither: all the agent can know of it from here is whether
`/v1/models` answers and whether the configured model is among those it lists. Its rate limits
and spend are what the runner meets (runner.json, per dataset); the console adds those up.
Every failure is a reading that says what failed, never an exception to the daemon.
"""

from __future__ import annotations

import json
from typing import Any

from agent.host.bounded_http import bounded_body
from agent.probes import prometheus
from agent.probes.http_reads import MAX_JSON_BYTES, PROBE_TIMEOUT_S, get_text
from agent.probes.unreachable import unreachable_reason
from agent.probes.values import text
from agent.probes.vllm_probe import probe_vllm
from agent.protocol import ServerStats

MODEL_HINT = "set model under [hosts.NAME.sglang] to check it is served"


async def probe_openai(session: Any, url: str, model: str | None) -> ServerStats:
    """One reading of the /v1 server at `url`, which the host's config says serves `model`."""
    try:
        status, listed = await _models(session, url)
    except Exception as exc:  # any failure to connect is the reading: unreachable
        return ServerStats(url=url, healthy=False, detail=f"unreachable: {_reason(exc)}")
    if status != 200:
        return ServerStats(url=url, healthy=False, detail=f"/v1/models answered HTTP {status}")
    if prometheus.parse(await get_text(session, f"{url}/metrics"), "vllm"):
        healthy, detail = await _health(session, url)
        if stats := await probe_vllm(session, url, healthy, detail):
            return stats
    return hosted_stats(url, model, listed)


def hosted_stats(url: str, model: str | None, listed: list[str]) -> ServerStats:
    """A hosted API that answered: healthy unless the configured model is not among its models."""
    served = model is None or model in listed
    if model is None:
        detail = f"hosted API, reachable; it lists {len(listed):,} model(s); {MODEL_HINT}"
    elif served:
        detail = f"hosted API, reachable; serves {model}"
    else:
        detail = f"hosted API, reachable, but {model} is not among the {len(listed):,} it lists"
    return ServerStats(url=url, healthy=served, detail=detail, model_path=model, hosted=True)


async def _models(session: Any, url: str) -> tuple[int, list[str]]:
    """The status of `/v1/models` and the model ids it lists (raises when it cannot be reached)."""
    async with session.get(f"{url}/v1/models") as response:
        if response.status != 200:
            return response.status, []
        try:
            body = json.loads(await bounded_body(response, MAX_JSON_BYTES))
        except ValueError:  # not JSON, or past its bound
            return 200, []
    data = body.get("data") if isinstance(body, dict) else None
    entries = data if isinstance(data, list) else []
    return 200, [name for e in entries if isinstance(e, dict) and (name := text(e.get("id")))]


async def _health(session: Any, url: str) -> tuple[bool, str]:
    try:
        async with session.get(f"{url}/health") as response:
            return response.status == 200, f"/health answered HTTP {response.status}"
    except Exception as exc:  # /v1/models answered: a missing /health is a detail, not a crash
        return False, f"/health failed: {_reason(exc)}"


def _reason(exc: BaseException) -> str:
    return unreachable_reason(exc, PROBE_TIMEOUT_S)
