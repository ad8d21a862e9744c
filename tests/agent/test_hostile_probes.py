"""A server whose info and metrics misbehave never makes the probe raise or the agent bloat (#28).

A Prometheus NaN sample is legal ("no value now"); wrong types in /server_info (a string where a
count belongs, a list where a name belongs, a NaN) made the probe raise at every refresh, so the
server panel stayed empty. An endless /metrics took the agent to +4 GB within the probe's 5 s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from agent.probes.sglang_http import probe_sglang

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
        while True:  # until the probe stops reading and goes
            await response.write(b'sglang:num_running_reqs{dp_rank="0"} 1\n' * 4096)

    def fixed(text: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def answer(request: web.Request) -> web.Response:
            return web.Response(text=text, content_type="application/json")

        return answer

    app = web.Application()
    app.router.add_get("/health", fixed("ok"))
    app.router.add_get("/server_info", fixed(SERVER_INFO))
    app.router.add_get("/model_info", fixed('{"model_path": "m/real"}'))
    app.router.add_get("/metrics", endless if metrics == "endless" else fixed(metrics))
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_nan_samples_and_wrong_types_are_missing_figures_and_the_rest_is_shown() -> None:
    async with server(METRICS) as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert stats.model_path == "m/real"
    assert stats.speculative_algorithm is None
    assert stats.max_running_requests == 48
    assert stats.running_requests == 12
    assert stats.queued_requests == 2
    assert stats.token_usage is None
    assert stats.gen_throughput_tokens_per_s == 100.5


async def test_an_endless_metrics_answer_is_not_read_past_its_bound() -> None:
    async with server("endless") as url:
        stats = await probe_sglang(url)
    assert stats.healthy is True
    assert stats.model_path == "m/real"
    assert stats.running_requests is None  # the metrics were refused, not read to the end
