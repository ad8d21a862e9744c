"""The agent's server probe reads a vLLM server (the simulator's vllm flavour) for what it is."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

from agent.probes.sglang_http import probe_sglang
from agent.probes.vllm_probe import generation_rate
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
