"""SGLang over HTTP: health, server and model info, and /metrics summed over DP ranks.

The current paths come first (`/server_info`, `/model_info`); the deprecated `get_` forms log a
WARNING in the server's log on every call (srt/entrypoints/http_server.py:802-809, 853-860), so
they are asked only when the current path answers 404. Who answered is told by the keys of
the answer (agent/host/server_identity.py), never by a 200 alone: `/get_server_info` with
`router_manager` is an sglang-router, probed as one (router_probe.py); `vllm_config` is vLLM
with VLLM_SERVER_DEV_MODE=1 (vllm entrypoints/serve/dev/server_info/api_router.py:43-59), probed
as vLLM whatever the config says (vllm_probe.py); a 404 on both forms with a `/v1/models` answer
is a vLLM server too. A configured `api` ends the guessing: `sglang` is never guessed into
vLLM; under `openai-*` SGLang (its /v1 routes) is still SGLang, and a server without
/server_info is an OpenAI-compatible one (openai_probe.py: vLLM, or a hosted API). With
`--api-key` the key goes with every request; a 401 or 403 on /server_info while /health answers
is a key problem (a refused key, none configured, an unreadable file), named as such.

aiohttp is imported here, lazily: it is present wherever SGLang is, but the agent core must not
need it. Every failure is a reading that says what failed, never an exception to the daemon.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from agent.host.server_identity import server_info_kind
from agent.host.sglang_auth import bearer_headers
from agent.probes import prometheus
from agent.probes.http_reads import PROBE_TIMEOUT_S, get_json, get_text
from agent.probes.openai_probe import probe_openai
from agent.probes.router_probe import probe_router
from agent.probes.unreachable import unreachable_reason
from agent.probes.values import count, text
from agent.probes.vllm_probe import probe_vllm
from agent.protocol import KeyProblem, ServerApi, ServerPart, ServerStats

TIMEOUT_S = PROBE_TIMEOUT_S
WARMING_DETAIL = "/health answered HTTP 503"


async def probe_sglang(
    url: str, api_key: str | None = None, key_note: str = "", api: ServerApi | None = None,
    model: str | None = None, key_source: str | None = None,
) -> ServerStats:  # fmt: skip
    """One reading of the server (or router) at `url`; `key_note` says why no key could be read.

    `api` and `model` are the host's config: under an `openai-*` api a server with no
    /server_info is read as an OpenAI-compatible one that serves `model` (vLLM, or a hosted
    API); None leaves the probe to tell SGLang from vLLM by their answers. `key_source` says
    where `api_key` came from ("the key in ~/.sglang-key"), for the reading of a refused key.
    """
    try:
        import aiohttp
    except ImportError:
        return ServerStats(url=url, healthy=None, detail="aiohttp is not installed for this python")
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout, headers=bearer_headers(api_key)) as session:
        try:
            healthy, detail = await _health(session, url)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            return ServerStats(
                url=url, healthy=False, detail=f"unreachable: {unreachable_reason(exc, TIMEOUT_S)}"
            )
        status, info = await _current_or_deprecated(session, url, "server_info")
        kind = server_info_kind(info)
        if kind == "router":
            return await probe_router(session, url)
        if kind == "vllm":
            return await _vllm_by_its_info(session, url, healthy, detail)
        if other := await _not_sglang(session, url, status, api, model, (healthy, detail)):
            return other
        _, model_info = await _current_or_deprecated(session, url, "model_info")
        samples = prometheus.parse(await get_text(session, f"{url}/metrics"))
    stats = _stats(url, healthy, detail, info, model_info, samples)
    if status in (401, 403):
        problem, said = key_trouble(status, api_key, key_source, key_note)
        return replace(stats, detail=_join(detail, said), key_problem=problem)
    return stats


async def _not_sglang(
    session: Any, url: str, status: int, api: ServerApi | None, model: str | None,
    health: tuple[bool, str],
) -> ServerStats | None:  # fmt: skip
    """The reading of a server with no /server_info of its own; None when it is SGLang.

    SGLang answers /server_info under every api (its /v1 routes included), so only a server
    that does not is read as the config's openai-* api says, or, with no api, as vLLM if its
    /v1/models answers.
    """
    if status in (200, 401, 403) or api == "sglang":
        return None  # SGLang, or a server that wants a key before it says what it is
    if api is not None:
        return await probe_openai(session, url, model)
    return await probe_vllm(session, url, *health) if status == 404 else None


async def _vllm_by_its_info(session: Any, url: str, healthy: bool, detail: str) -> ServerStats:
    """A server whose /server_info is vLLM's own: read as vLLM, never as an empty SGLang."""
    stats = await probe_vllm(session, url, healthy, detail)
    if stats is not None:
        return stats
    missing = "vLLM (by its /server_info), but /v1/models lists no model"
    return ServerStats(url=url, healthy=False, detail=_join(detail, missing))


_KEY_HINT = "set api_key_file under [hosts.NAME.sglang] (or SGLANG_API_KEY for the agent)"


def key_trouble(
    status: int, api_key: str | None, key_source: str | None, key_note: str
) -> tuple[KeyProblem, str]:
    """What a 401 or 403 on /server_info says about the key, and the words for the reading.

    A key that was sent and refused is never told to be set: it is set, and wrong.
    """
    answered = f"/server_info answered HTTP {status}"
    if key_note:
        return "unreadable", f"{answered}: {key_note}"
    if api_key:
        source = key_source or "the key sent"
        return "refused", (
            f"key refused: {source} was refused by the server ({answered}): check the key; "
            "it must be the server's --api-key"
        )
    return "missing", f"{answered}: the server wants an API key: {_KEY_HINT}"


def _stats(
    url: str, healthy: bool, detail: str, info: dict[str, Any], model: dict[str, Any],
    samples: list[prometheus.Sample],
) -> ServerStats:  # fmt: skip
    return ServerStats(
        url=url, healthy=healthy, detail=detail,
        model_path=text(model.get("model_path")) or text(info.get("model_path")),
        speculative_algorithm=text(info.get("speculative_algorithm")),
        max_running_requests=max_running_requests(info),
        **prometheus.sglang_figures(samples),
        parts=rank_parts(samples),
    )  # fmt: skip


def max_running_requests(info: dict[str, Any]) -> int | None:
    """The effective cap: the per-DP values summed, else the flag (None unless it was given).

    /server_info's top level echoes the command line (arg_groups/fields/schedule.py:31-34);
    each scheduler reports what it really uses in internal_states
    (managers/scheduler_components/internal_state.py:67-74).
    """
    states = info.get("internal_states")
    per_dp = [
        value
        for state in (states if isinstance(states, list) else [])
        if isinstance(state, dict)
        and (value := count(state.get("effective_max_running_requests_per_dp"))) is not None
    ]
    return sum(per_dp) if per_dp else count(info.get("max_running_requests"))


def rank_parts(samples: list[prometheus.Sample]) -> tuple[ServerPart, ...]:
    """Per-DP-rank figures, when the metrics have more than one rank."""
    ranks = prometheus.by_part(samples, "dp_rank")
    if len(ranks) < 2:
        return ()
    return tuple(
        ServerPart(
            name=f"DP{rank}",
            running_requests=count(figures.get("num_running_reqs")),
            queued_requests=count(figures.get("num_queue_reqs")),
            gen_throughput_tokens_per_s=figures.get("gen_throughput"),
            token_usage=figures.get("token_usage"),
        )
        for rank, figures in ranks.items()
    )


async def _health(session: Any, url: str) -> tuple[bool, str]:
    async with session.get(f"{url}/health") as response:
        if response.status == 503:
            return False, f"{WARMING_DETAIL}: starting up (warming) or unhealthy"
        return response.status == 200, f"/health answered HTTP {response.status}"


async def _current_or_deprecated(session: Any, url: str, name: str) -> tuple[int, dict[str, Any]]:
    """The current path's JSON; the deprecated `get_` path only when the current one is 404."""
    status, body = await get_json(session, f"{url}/{name}")
    if status == 404:
        status, body = await get_json(session, f"{url}/get_{name}")
    return status, body


def _join(detail: str, more: str) -> str:
    return f"{detail}; {more}" if detail else more
