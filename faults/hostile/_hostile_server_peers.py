"""The loopback peers of the hostile_servers scenario: a model server and a set of webhooks.

The model server answers /server_info with wrong types and a NaN, and /metrics with NaN samples
or a body that never ends. The hooks, one path each: `good` answers 200 and keeps each POST's
body; `endless` answers 200 and never ends its body; `redirect` answers 302 to `good` (a GET there
is counted, a followed redirect); `drip` answers 200 and then a byte a second. Nothing here
checks anything: the scenario does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

METRICS = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0"} 7
sglang:num_running_reqs{dp_rank="1"} 5
sglang:num_queue_reqs{dp_rank="0"} NaN
sglang:num_queue_reqs{dp_rank="1"} 2
sglang:token_usage{dp_rank="0"} NaN
sglang:gen_throughput{dp_rank="0"} 100.5
"""
"""12 running over two ranks; the NaNs are no value now, legal Prometheus."""
SERVER_INFO = (
    '{"model_path": ["not", "a", "name"], "speculative_algorithm": 5, '
    '"max_running_requests": NaN, "internal_states": [{"effective_max_running_requests_per_dp": '
    '"many"}, {"effective_max_running_requests_per_dp": 48}, "junk"]}'
)
ENDLESS_CHUNK = b'sglang:num_running_reqs{dp_rank="0"} 1\n' * 4096


@dataclass
class Peers:
    """The URLs of both servers and what they saw."""

    model_url: str = ""
    hooks_url: str = ""
    metrics: str = "nan"
    """What /metrics answers now: `nan` (METRICS) or `endless`."""
    posts: Counter[str] = field(default_factory=Counter)
    """POSTs per hook path; GETs of `good` are counted as `followed`."""
    delivered: list[bytes] = field(default_factory=list)
    """The bodies `good` received."""


@contextlib.asynccontextmanager
async def hostile_peers() -> AsyncIterator[Peers]:
    """Both servers on 127.0.0.1, port 0; stopped afterwards."""
    peers = Peers()
    model = await _serve(_model_app(peers))
    hooks = await _serve(_hooks_app(peers))
    peers.model_url, peers.hooks_url = _url(model), _url(hooks)
    try:
        yield peers
    finally:
        await hooks.cleanup()
        await model.cleanup()


def _model_app(peers: Peers) -> web.Application:
    async def metrics(request: web.Request) -> web.StreamResponse:
        if peers.metrics != "endless":
            return web.Response(text=METRICS)
        return await _endless(request)

    app = web.Application()
    app.router.add_get("/health", _fixed("ok"))
    app.router.add_get("/server_info", _fixed(SERVER_INFO))
    app.router.add_get("/model_info", _fixed('{"model_path": "m/real"}'))
    app.router.add_get("/metrics", metrics)
    return app


def _hooks_app(peers: Peers) -> web.Application:
    async def hook(request: web.Request) -> web.StreamResponse:
        kind = request.match_info["kind"]
        body = await request.content.read(1 << 16)
        peers.posts[kind] += 1
        if kind == "good":
            peers.delivered.append(body)
            return web.Response(text="ok")
        if kind == "redirect":
            raise web.HTTPFound("/good")
        return await (_endless(request) if kind == "endless" else _drip(request))

    async def followed(request: web.Request) -> web.Response:
        peers.posts["followed"] += 1
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/{kind}", hook)
    app.router.add_get("/good", followed)
    return app


async def _endless(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):  # until the reader goes
        while True:
            await response.write(ENDLESS_CHUNK)
    return response


async def _drip(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    with contextlib.suppress(ConnectionError):
        while True:
            await response.write(b"x")
            await asyncio.sleep(1.0)
    return response


def _fixed(text: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def answer(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="application/json")

    return answer


async def _serve(app: web.Application) -> web.AppRunner:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


def _url(runner: web.AppRunner) -> str:
    return f"http://127.0.0.1:{runner.addresses[0][1]}"
