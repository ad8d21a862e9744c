"""The vllm flavour does what vLLM 0.34.0 does wherever the runner or the probe relies on it.

One test per behaviour, each against the source line it follows (trainers-and-servers-2026-12.md,
the code comments in agent/simulator/openai_requests.py and vllm_metrics.py), so the simulator
cannot drift from the server again without a test failing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest

from agent.host.server_identity import server_info_kind
from agent.probes import prometheus
from agent.probes.vllm_spec import figures_of, spec_counters
from tests.support.json_http import post
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "20", "--mean-tokens", "60", "--sd-tokens", "20", "--seed", "3")
CONTEXT = ("--flavor", "vllm", "--context-length", "40")
MESSAGES = [{"role": "user", "content": "why is the sum so"}]


async def test_max_tokens_past_the_context_is_refused_not_clamped(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """renderers/params.py:272-284, the field's own name in chat (chat_completion/protocol.py:686)."""
    with running_simulator(tmp_path, *FAST, *CONTEXT) as sim:
        status, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": [1, 2, 3], "max_tokens": 41, "return_token_ids": True})  # fmt: skip
        chat_status, chat = await post(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_completion_tokens": 500})  # fmt: skip

    assert (status, chat_status) == (400, 400)
    assert body["error"]["message"] == (
        "max_tokens=41 cannot be greater than max_model_len=40. Please request fewer output tokens."
    )
    assert body["error"]["code"] == 400
    assert chat["error"]["message"].startswith("max_completion_tokens=500 cannot be greater")


async def test_prompt_and_max_tokens_past_the_context_are_clamped_to_what_is_left(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """0.33 and 0.34 clamp (entrypoints/serve/utils/api_utils.py:234-270); 0.20 refused."""
    with running_simulator(tmp_path, *FAST, *CONTEXT, "--mean-tokens", "500") as sim:
        status, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": list(range(30)), "max_tokens": 40, "return_token_ids": True})  # fmt: skip

    assert status == 200, body
    choice = body["choices"][0]
    assert len(choice["token_ids"]) == 10
    assert choice["finish_reason"] == "length"


async def test_max_tokens_defaults_to_16_for_completions(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """completion/protocol.py:64."""
    with running_simulator(tmp_path, *FAST, "--flavor", "vllm", "--mean-tokens", "500") as sim:
        _, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": [1, 2, 3], "return_token_ids": True})  # fmt: skip

    assert len(body["choices"][0]["token_ids"]) == 16


@pytest.mark.parametrize(
    ("prompt_tokens", "message"),
    [
        (41, "This model's maximum context length is 40 tokens. However, your prompt contains 41 "
         "input tokens, which exceeds this limit even without any output tokens. Please reduce "
         "the length of the input prompt."),
        (40, "max_tokens must be at least 1, got 0."),
    ],
)  # fmt: skip
async def test_a_prompt_past_or_at_the_context_is_refused_in_vllms_words(
    tmp_path: Path, http: aiohttp.ClientSession, prompt_tokens: int, message: str
) -> None:
    """renderers/params.py:535-552; at the context 0 tokens are left (sampling_params.py:695-700)."""
    with running_simulator(tmp_path, *FAST, *CONTEXT) as sim:
        status, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": list(range(prompt_tokens)), "max_tokens": 5})  # fmt: skip

    assert status == 400
    assert body["error"]["message"] == message


async def test_completions_stream_the_same_ids_with_the_prompt_ids_first_and_usage_last(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """completion/serving.py:343-626."""
    request = {"prompt": [5, 6, 7], "max_tokens": 200, "return_token_ids": True}
    with running_simulator(tmp_path, *FAST, "--flavor", "vllm") as sim:
        _, whole = await post(http, f"{sim.url}/v1/completions", request)
        async with http.post(f"{sim.url}/v1/completions", json=request | {
            "stream": True, "stream_options": {"include_usage": True}}) as response:  # fmt: skip
            text = await response.text()

    events = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"text_completion"}
    choices = [choice for chunk in chunks for choice in chunk["choices"]]
    assert choices[0]["prompt_token_ids"] == [5, 6, 7]
    assert all("prompt_token_ids" not in choice for choice in choices[1:])
    streamed = [token for choice in choices for token in choice["token_ids"]]
    assert streamed == whole["choices"][0]["token_ids"]
    assert "".join(choice["text"] for choice in choices) == whole["choices"][0]["text"]
    assert choices[-1]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == len(streamed)


async def test_metrics_have_one_series_per_engine_with_the_kv_cache_share(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """v1/metrics/loggers.py:499-545, 620: `engine` and `model_name` labels on every series."""
    slow = ("--speed", "1", "--mean-tokens", "100000", "--sd-tokens", "1")
    args = ("--flavor", "vllm", "--dp-size", "2", "--context-length", "300000", *slow)
    with running_simulator(tmp_path, *args) as sim:
        pending = [
            asyncio.create_task(
                post(
                    http, f"{sim.url}/v1/completions", {"prompt": [i] * 5000, "max_tokens": 200000}
                )
            )  # fmt: skip
            for i in range(2)
        ]
        samples = await running_samples(http, sim.url, 2)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    per_engine = prometheus.by_part(samples, "engine")
    assert sorted(per_engine) == ["0", "1"]
    for figures in per_engine.values():
        assert figures["num_requests_running"] == 1
        assert 0 < figures["kv_cache_usage_perc"] <= 1
    assert {s.labels["model_name"] for s in samples} == {"sim/eagle-target-sim"}
    assert "gpu_cache_usage_perc" not in {s.name for s in samples}, "gone in 0.34"


async def running_samples(
    http: aiohttp.ClientSession, url: str, running: int
) -> list[prometheus.Sample]:
    """The vllm: samples, once `running` requests run (the requests are planned to run long)."""
    while True:
        async with http.get(f"{url}/metrics") as response:
            samples = prometheus.parse(await response.text(), "vllm")
        if prometheus.totals(samples).get("num_requests_running") == running:
            return samples
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("dev_mode", [True, False])
async def test_server_info_answers_only_in_dev_mode_and_with_vllms_own_keys(
    tmp_path: Path, http: aiohttp.ClientSession, dev_mode: bool
) -> None:
    """entrypoints/serve/dev/server_info/api_router.py:43-59 (VLLM_SERVER_DEV_MODE=1)."""
    flags = ("--vllm-dev-mode",) if dev_mode else ()
    with running_simulator(tmp_path, *FAST, "--flavor", "vllm", *flags) as sim:
        async with http.get(f"{sim.url}/server_info") as response:
            status, text = response.status, await response.text()

    if dev_mode:
        assert status == 200
        body = json.loads(text)
        assert {"vllm_config", "vllm_env", "system_env"} <= body.keys()
        assert server_info_kind(body) == "vllm"
    else:
        assert status == 404


async def test_a_drafter_counts_drafts_and_accepted_tokens_as_vllm_does(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """v1/spec_decode/metrics.py ~229-275: the counters, per engine and per draft position."""
    args = ("--flavor", "vllm", "--dp-size", "2", "--speculative-accept-length", "2.5",
            "--speculative-num-draft-tokens", "4", *FAST, "--context-length", "4000")  # fmt: skip
    with running_simulator(tmp_path, *args) as sim:
        answers = await asyncio.gather(*(
            post(http, f"{sim.url}/v1/completions", {"prompt": [i, 2], "max_tokens": 300})
            for i in range(8)
        ))  # fmt: skip
        async with http.get(f"{sim.url}/metrics") as response:
            samples = prometheus.parse(await response.text(), "vllm")

    assert all(status == 200 for status, _ in answers)
    counters = spec_counters(samples)
    assert counters is not None
    assert len(counters.per_position) == 3, "num_speculative_tokens: SGLang's draft tokens less one"
    figures = figures_of(counters)
    assert figures.accept_length == pytest.approx(2.5, abs=0.05)
    assert counters.draft_tokens == 3 * counters.drafts
    engines = {s.labels["engine"] for s in samples if s.name == "spec_decode_num_drafts_total"}
    assert engines == {"0", "1"}
