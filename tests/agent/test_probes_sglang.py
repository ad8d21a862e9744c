"""The probe's numbers against a real SGLang's shapes: DP ranks, priorities, keys, old paths."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from agent.pipeline.inference.client import error_message
from agent.probes import prometheus
from agent.probes.cache import ProbeCache
from agent.probes.sglang_http import probe_sglang
from agent.probes.sglang_log import latest_decode_stats
from agent.protocol import PipelineConfig, ServerPart
from tests.support.simulator_process import SimulatorProcess, running_simulator

# Four requests per rank run for ~20 minutes at 80 tokens/s each: the figures hold still.
BUSY_DP2 = (
    "--speed", "1", "--dp-size", "2", "--max-running-requests", "8", "--mean-tokens", "100000",
    "--sd-tokens", "1", "--context-length", "300000",
)  # fmt: skip


async def fill(sim: SimulatorProcess, count: int) -> asyncio.Task[None]:
    """Send `count` long requests and wait until the ranks hold them."""

    async def send() -> None:
        async with aiohttp.ClientSession() as http:
            body = {
                "input_ids": [[i, 7] for i in range(count)],
                "sampling_params": {"max_new_tokens": 200000},
            }
            async with http.post(f"{sim.url}/generate", json=body):
                pass

    task = asyncio.create_task(send())
    while not all(
        re.search(rf"DP{rank}\] Decode batch", sim.log_file.read_text()) for rank in (0, 1)
    ):
        await asyncio.sleep(0.05)
    return task


def series(metrics: str, name: str) -> dict[str, float]:
    pattern = rf'^sglang:{name}\{{[^}}]*dp_rank="(\d)"\}} ([\d.]+)$'
    return {rank: float(value) for rank, value in re.findall(pattern, metrics, re.M)}


async def test_on_a_two_rank_dp_server_the_figures_are_the_sums_of_the_ranks(
    tmp_path: Path,
) -> None:
    with running_simulator(tmp_path / "sim", *BUSY_DP2) as sim:
        pending = await fill(sim, 12)  # 4 + 4 running, 2 + 2 queued
        stats = await probe_sglang(sim.url)
        async with aiohttp.ClientSession() as http, http.get(f"{sim.url}/metrics") as response:
            metrics = await response.text()
        log_stats = latest_decode_stats(sim.log_file)
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pending

    running, queued = series(metrics, "num_running_reqs"), series(metrics, "num_queue_reqs")
    assert running == {"0": 4.0, "1": 4.0}
    assert stats.running_requests == sum(running.values()) == 8
    assert stats.queued_requests == sum(queued.values()) == 4
    assert stats.max_running_requests == 8  # 4 per rank, from internal_states
    assert stats.gen_throughput_tokens_per_s == sum(series(metrics, "gen_throughput").values())
    assert [(p.name, p.running_requests, p.queued_requests) for p in stats.parts] == [
        ("DP0", 4, 2), ("DP1", 4, 2),
    ]  # fmt: skip
    assert log_stats is not None  # one Decode line per rank, summed
    assert (log_stats["#running-req"], log_stats["dp ranks"]) == (8.0, 2.0)
    assert "deprecated" not in sim.log_file.read_text()  # only the current paths were asked


async def test_an_api_key_goes_with_the_probes_and_a_missing_one_is_named(
    tmp_path: Path,
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("k-9\n")
    with running_simulator(tmp_path / "sim", "--api-key", "k-9", "--model-path", "org/m") as sim:
        keyless = await probe_sglang(sim.url)
        cache = ProbeCache()
        await cache._refresh(PipelineConfig(sglang_url=sim.url, sglang_api_key_file=str(key_file)))
        bad = ProbeCache()
        await bad._refresh(
            PipelineConfig(sglang_url=sim.url, sglang_api_key_file=str(tmp_path / "no"))
        )

    assert keyless.healthy is True  # /health is open; /server_info is not
    assert keyless.model_path is None
    assert "/server_info answered HTTP 401" in keyless.detail
    assert "api_key_file" in keyless.detail
    assert cache.server is not None
    assert cache.server.model_path == "org/m"
    assert bad.server is not None
    assert "cannot read it" in bad.server.detail


@contextlib.asynccontextmanager
async def old_sglang(tmp_path: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """A server that has only the deprecated `get_` paths, as SGLang before /server_info."""
    asked: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        asked.append(request.path)
        if request.path == "/get_server_info":
            return web.json_response({"model_path": "old/model", "max_running_requests": 48})
        if request.path == "/get_model_info":
            return web.json_response({"model_path": "old/model"})
        return web.Response(status=200 if request.path == "/health" else 404)

    app = web.Application()
    app.router.add_get("/{path:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", asked
    finally:
        await runner.cleanup()


async def test_the_deprecated_paths_are_asked_only_after_a_404(tmp_path: Path) -> None:
    async with old_sglang(tmp_path) as (url, asked):
        stats = await probe_sglang(url)
    assert (stats.model_path, stats.max_running_requests) == ("old/model", 48)
    assert asked[:5] == [
        "/health",
        "/server_info",
        "/get_server_info",
        "/model_info",
        "/get_model_info",
    ]


PRIORITY_AND_REPLICAS = """
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="",dp_rank="0"} 10.0
sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="0",dp_rank="0"} 7.0
sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="5",dp_rank="0"} 3.0
sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="1",pp_rank="0",moe_ep_rank="0",priority="",dp_rank="0"} 10.0
sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="",dp_rank="1"} 6.0
sglang:token_usage{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="",dp_rank="0"} 0.5
sglang:token_usage{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0",priority="",dp_rank="1"} 0.25
"""


def test_priority_breakdowns_and_tp_replicas_are_not_counted_twice() -> None:
    # totals carry priority="", the breakdown priority="<n>" (metrics_collector.py:1414-1426);
    # with --enable-metrics-for-all-schedulers each TP rank repeats its DP rank's figures
    samples = prometheus.parse(PRIORITY_AND_REPLICAS)
    assert prometheus.totals(samples) == {"num_running_reqs": 16.0, "token_usage": 0.375}
    assert prometheus.by_part(samples, "dp_rank")["1"] == {
        "num_running_reqs": 6.0,
        "token_usage": 0.25,
    }


def test_the_three_error_body_shapes_give_their_message_whole() -> None:
    long = "x" * 5000
    assert error_message(json.dumps({"error": {"message": long}})) == long
    assert error_message(json.dumps({"error": "unknown field `x`, expected one of `y`"})) == (
        "unknown field `x`, expected one of `y`"
    )
    assert error_message(
        json.dumps({"object": "error", "message": "The request queue is full.", "type": "503",
                    "param": None, "code": 503})
    ) == "The request queue is full."  # fmt: skip
    assert error_message("plain text\n") == "plain text"


def test_dp_decode_lines_are_summed_and_hybrid_swa_usage_read(tmp_path: Path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text(
        "[2026-11-29 09:00:00 DP2] Decode batch, #running-req: 50, #token: 9, token usage: 0.90, "
        "cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 9\n"  # idle since
        "[2026-11-29 10:00:00 DP0] Decode batch, #running-req: 3, #full token: 100, "
        "full token usage: 0.20, #swa token: 40, swa token usage: 0.60, cuda graph: True, "
        "gen throughput (token/s): 100.00, #queue-req: 1\n"
        "[2026-11-29 10:00:01 DP1] Decode batch, #running-req: 5, #full token: 300, "
        "full token usage: 0.40, #swa token: 50, swa token usage: 0.20, cuda graph: True, "
        "gen throughput (token/s): 200.00, #queue-req: 0\n"
    )
    stats = latest_decode_stats(log)
    assert stats is not None
    assert (stats["#running-req"], stats["#queue-req"], stats["gen throughput (token/s)"]) == (
        8.0, 1.0, 300.0,
    )  # fmt: skip
    assert stats["full token usage"] == pytest.approx(0.3)
    assert stats["token usage"] == pytest.approx(0.4)  # max of full and swa, as SGLang's gauge
    assert stats["dp ranks"] == 2.0


def test_ranks_show_in_the_server_panel_text() -> None:
    from agent.protocol import ServerStats
    from console.model.formatting import server_text

    text = server_text(
        ServerStats(
            url="http://x", healthy=True, running_requests=8,
            parts=(ServerPart("DP0", running_requests=4, queued_requests=2,
                              gen_throughput_tokens_per_s=320.0, token_usage=0.5),
                   ServerPart("DP1", running_requests=4, queued_requests=2)),
        )
    )  # fmt: skip
    assert "  DP0  running 4 · queued 2 · gen 320 tok/s · usage 0.50" in text
    assert "  DP1  running 4 · queued 2" in text
