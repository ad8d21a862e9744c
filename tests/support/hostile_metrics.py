"""An SGLang-like server on loopback whose /server_info has wrong types and NaN, and whose
/metrics has NaN samples, or never ends. Shared by the probe test and hostile_peers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from tests.support.loopback_app import serving

METRICS = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0"} 7
sglang:num_running_reqs{dp_rank="1"} 5
sglang:num_queue_reqs{dp_rank="0"} NaN
sglang:num_queue_reqs{dp_rank="1"} 2
sglang:token_usage{dp_rank="0"} +Inf
sglang:gen_throughput{dp_rank="0"} 100.5
sglang:gen_throughput{dp_rank="1"} NaN
"""
SERVER_INFO = (
    '{"model_path": ["not", "a", "name"], "speculative_algorithm": 5, '
    '"max_running_requests": NaN, "internal_states": [{"effective_max_running_requests_per_dp": '
    '"many"}, {"effective_max_running_requests_per_dp": 48}, "junk"]}'
)


@contextlib.asynccontextmanager
async def server(metrics: str = "endless") -> AsyncIterator[str]:
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):  # until the probe stops reading and goes
            while True:
                await response.write(b'sglang:num_running_reqs{dp_rank="0"} 1\n' * 4096)
        return response

    def fixed(text: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def answer(request: web.Request) -> web.Response:
            return web.Response(text=text, content_type="application/json")

        return answer

    app = web.Application()
    app.router.add_get("/health", fixed("ok"))
    app.router.add_get("/server_info", fixed(SERVER_INFO))
    app.router.add_get("/model_info", fixed('{"model_path": "m/real"}'))
    app.router.add_get("/metrics", endless if metrics == "endless" else fixed(metrics))
    async with serving(app) as url:
        yield url
