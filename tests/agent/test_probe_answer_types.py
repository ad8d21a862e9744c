"""Every field of a server's answer is taken only if it is what it holds; the rest is still shown.

Servers on loopback whose JSON has the wrong types where the probe reads it: a router's worker
list that is a number (the probe raised at every refresh), names that are lists or objects (shown
as their Python repr), a boolean context length, a negative or absurd count, a name of megabytes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

from aiohttp import web

from agent.probes.sglang_http import probe_sglang
from agent.probes.values import MAX_COUNT, MAX_TEXT_CHARS
from tests.support.loopback_app import serving

Routes = dict[str, tuple[int, str]]


@contextlib.asynccontextmanager
async def server(routes: Routes) -> AsyncIterator[str]:
    """Answers each path in `routes` with its status and text; 404 for any other."""

    async def answer(request: web.Request) -> web.Response:
        status, body = routes.get(request.path, (404, "{}"))
        return web.Response(status=status, text=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    async with serving(app) as url:
        yield url


def router(workers: object) -> Routes:
    return {
        "/health": (200, "ok"),
        "/get_server_info": (200, '{"router_manager": true}'),
        "/readiness": (200, '{"healthy_workers": -3, "total_workers": 1e300, "reason": [1]}'),
        "/workers": (200, json.dumps({"workers": workers})),
    }


async def test_a_router_whose_worker_list_is_a_number_reads_as_no_workers() -> None:
    async with server(router(5)) as url:
        stats = await probe_sglang(url)
    assert stats.is_router is True
    assert (stats.healthy_workers, stats.total_workers, stats.parts) == (0, 0, ())


async def test_a_router_worker_with_names_of_the_wrong_type_is_shown_without_them() -> None:
    workers = [{"url": {"host": "x"}, "model_id": ["m"], "is_healthy": True, "load": "high"}]
    async with server(router(workers)) as url:
        stats = await probe_sglang(url)
    assert stats.model_path is None
    assert [(p.name, p.healthy, p.load) for p in stats.parts] == [("?", True, None)]
    assert (stats.healthy_workers, stats.total_workers) == (1, 1)


async def test_a_vllm_model_listing_of_the_wrong_types_is_still_read_as_vllm() -> None:
    models = '{"data": [{"id": ["not", "a", "name"], "max_model_len": true}]}'
    async with server({"/health": (200, "ok"), "/v1/models": (200, models)}) as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert stats.model_path is None
    assert stats.detail.endswith("; vLLM")


async def test_negative_or_absurd_counts_and_a_name_of_megabytes_are_missing_figures() -> None:
    info = json.dumps({
        "model_path": "m" * (MAX_TEXT_CHARS + 1), "max_running_requests": MAX_COUNT * 2.0,
    })  # fmt: skip
    metrics = 'sglang:num_running_reqs{dp_rank="0"} -4\nsglang:num_queue_reqs{dp_rank="0"} 3\n'
    routes = {"/health": (200, "ok"), "/server_info": (200, info), "/metrics": (200, metrics)}
    async with server(routes) as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert (stats.model_path, stats.max_running_requests) == (None, None)
    assert (stats.running_requests, stats.queued_requests) == (None, 3)
