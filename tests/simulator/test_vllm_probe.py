"""The agent's server probe reads a vLLM server (the simulator's vllm flavour) for what it is."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.probes import prometheus
from agent.probes.sglang_http import probe_sglang
from agent.probes.vllm_probe import generation_rate, kv_cache_usage
from agent.protocol import ServerStats
from tests.support.simulator_process import running_simulator


def complete(url: str) -> None:
    body = json.dumps({"prompt": [1, 2, 3], "max_tokens": 50}).encode()
    request = urllib.request.Request(
        f"{url}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def test_a_vllm_server_shows_its_model_context_load_and_tokens_per_s(tmp_path: Path) -> None:
    with running_simulator(
        tmp_path, "--flavor", "vllm", "--speed", "50", "--context-length", "8192",
        "--model-path", "org/served-model",
    ) as sim:  # fmt: skip
        first = asyncio.run(probe_sglang(sim.url))
        complete(sim.url)
        second = asyncio.run(probe_sglang(sim.url))

    assert first.healthy is True
    assert first.model_path == "org/served-model"
    assert "vLLM, max context 8,192 tokens" in first.detail
    assert first.running_requests == 0
    assert first.queued_requests == 0
    assert first.gen_throughput_tokens_per_s is None, "a rate needs two readings"
    assert second.gen_throughput_tokens_per_s is not None
    assert second.gen_throughput_tokens_per_s > 0


def test_the_rate_restarts_when_the_counter_goes_back() -> None:
    url = "http://example.invalid:1"
    assert generation_rate(url, 100.0, now=10.0) is None
    assert generation_rate(url, 300.0, now=12.0) == 100.0
    assert generation_rate(url, 5.0, now=13.0) is None, "a restarted server's counter"


def test_a_vllm_in_dev_mode_is_read_as_vllm_by_its_own_keys_not_as_sglang(tmp_path: Path) -> None:
    """VLLM_SERVER_DEV_MODE=1 answers /server_info 200 (serve/dev/server_info/api_router.py)."""
    args = ("--flavor", "vllm", "--vllm-dev-mode", "--model-path", "org/served-model")
    with running_simulator(tmp_path, *args) as sim:
        guessed = asyncio.run(probe_sglang(sim.url))
        told = asyncio.run(probe_sglang(sim.url, api="openai-chat", model="org/served-model"))

    for stats in (guessed, told):
        assert "vLLM, max context 32,768 tokens" in stats.detail
        assert (stats.model_path, stats.running_requests, stats.hosted) == (
            "org/served-model",
            0,
            False,
        )


VLLM_TWO_ENGINES = """
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 3.0
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 4.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 1.0
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.75
"""


def test_engines_are_summed_not_engine_0_kept_and_the_old_kv_name_is_read() -> None:
    """v1/metrics/loggers.py:499-545: one series per engine; before 0.34 gpu_cache_usage_perc."""
    samples = prometheus.parse(VLLM_TWO_ENGINES, "vllm")
    total = prometheus.totals(samples)
    assert (total["num_requests_running"], total["num_requests_waiting"]) == (6.0, 5.0)
    assert kv_cache_usage(total) == 0.5
    assert kv_cache_usage(prometheus.by_part(samples, "engine")["1"]) == 0.75


@pytest.fixture
def busy_dp_vllm(tmp_path: Path) -> Iterator[str]:
    """A two-engine vLLM with three long requests on each engine, cut when the test ends."""
    args = ("--flavor", "vllm", "--dp-size", "2", "--speed", "1", "--mean-tokens", "100000",
            "--sd-tokens", "1", "--context-length", "300000")  # fmt: skip
    with running_simulator(tmp_path, *args) as sim:
        for index in range(6):
            body = {"prompt": [index + 1] * 4000, "max_tokens": 200000}
            threading.Thread(target=_post_quietly, args=(sim.url, body), daemon=True).start()
        yield sim.url


def _post_quietly(url: str, body: dict[str, object]) -> None:
    request = urllib.request.Request(
        f"{url}/v1/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            response.read()
    except OSError:  # the simulator is stopped under it when the test ends
        return


def test_a_data_parallel_vllm_shows_each_engine_and_their_sum_in_the_header(
    busy_dp_vllm: str,
) -> None:
    stats = asyncio.run(_reading_with(busy_dp_vllm, running=6))

    assert stats.running_requests == 6, "both engines, not engine 0 alone"
    assert [part.name for part in stats.parts] == ["engine 0", "engine 1"]
    assert [part.running_requests for part in stats.parts] == [3, 3]
    usage = [part.token_usage for part in stats.parts]
    assert all(u is not None and 0 < u <= 1 for u in usage), usage
    assert stats.token_usage == pytest.approx(sum(u or 0 for u in usage) / 2, abs=1e-4)


async def _reading_with(url: str, running: int) -> ServerStats:
    """The probe's reading once `running` requests run, counted in the raw metrics text."""
    while _running_series_sum(url) != running:
        await asyncio.sleep(0.05)
    return await probe_sglang(url)


def _running_series_sum(url: str) -> float:
    """vllm:num_requests_running over every series, read without the probe's code."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    name = "vllm:num_requests_running{"
    return sum(float(line.split()[-1]) for line in lines if line.startswith(name))
