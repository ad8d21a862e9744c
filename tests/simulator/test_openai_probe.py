"""The probe reads the server as the host's config `api` says: vLLM, a hosted API, or SGLang."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.probes.sglang_http import probe_sglang
from tests.support.simulator_process import running_simulator

MODEL = "org/served-model"


def test_a_hosted_api_shows_it_is_reachable_and_serves_the_configured_model(
    tmp_path: Path,
) -> None:
    with running_simulator(tmp_path, "--flavor", "hosted", "--model-path", MODEL) as sim:
        served = asyncio.run(probe_sglang(sim.url, api="openai-chat", model=MODEL))
        missing = asyncio.run(probe_sglang(sim.url, api="openai-chat", model="org/other"))
        unnamed = asyncio.run(probe_sglang(sim.url, api="openai-chat"))
    assert (served.hosted, served.healthy, served.model_path) == (True, True, MODEL)
    assert f"serves {MODEL}" in served.detail
    assert (missing.hosted, missing.healthy) == (True, False)
    assert "org/other is not among the 1 it lists" in missing.detail
    assert unnamed.healthy is True
    assert "set model under [hosts.NAME.sglang]" in unnamed.detail


def test_a_vllm_server_under_an_openai_api_reads_as_vllm_not_hosted(tmp_path: Path) -> None:
    with running_simulator(tmp_path, "--flavor", "vllm", "--model-path", MODEL) as sim:
        stats = asyncio.run(probe_sglang(sim.url, api="openai-completions", model=MODEL))
    assert (stats.hosted, stats.healthy, stats.model_path) == (False, True, MODEL)
    assert "vLLM" in stats.detail
    assert stats.running_requests == 0


def test_an_unreachable_openai_api_says_so() -> None:
    stats = asyncio.run(probe_sglang("http://127.0.0.1:1", api="openai-chat", model=MODEL))
    assert stats.healthy is False
    assert stats.detail.startswith("unreachable: nothing listens on 127.0.0.1:1")


def test_an_sglang_api_is_not_guessed_into_vllm(tmp_path: Path) -> None:
    with running_simulator(tmp_path, "--flavor", "vllm", "--model-path", MODEL) as sim:
        guessed = asyncio.run(probe_sglang(sim.url))
        told = asyncio.run(probe_sglang(sim.url, api="sglang"))
    assert "vLLM" in guessed.detail
    assert "vLLM" not in told.detail
    assert told.model_path is None


def test_sglangs_own_v1_routes_under_an_openai_api_still_read_as_sglang(tmp_path: Path) -> None:
    with running_simulator(tmp_path, "--model-path", MODEL) as sim:
        stats = asyncio.run(probe_sglang(sim.url, api="openai-completions", model=MODEL))
    assert (stats.hosted, stats.healthy, stats.model_path) == (False, True, MODEL)
    assert stats.max_running_requests is not None, "read from /server_info"
