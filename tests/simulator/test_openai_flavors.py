"""The vllm and hosted flavours speak the OpenAI-compatible API as vLLM 0.34 and hosted APIs do.

vLLM's context rules, its metrics per engine and its dev-mode /server_info are in
test_vllm_facts.py; SGLang's /v1 here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.simulator.__main__ import build_parser, config_from
from tests.support.json_http import post
from tests.support.simulator_process import SimulatorProcess, running_simulator

FAST = ("--speed", "20", "--mean-tokens", "60", "--sd-tokens", "20", "--seed", "3")
MESSAGES = [{"role": "user", "content": "why is the sum so"}]


@pytest.fixture
def vllm(tmp_path: Path) -> Iterator[SimulatorProcess]:
    with running_simulator(tmp_path / "vllm", *FAST, "--flavor", "vllm", "--reasoning") as sim:
        yield sim


async def events(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> list[Any]:
    """Every `data:` event of a stream, [DONE] as the string."""
    async with http.post(url, json=body) as response:
        assert response.status == 200
        text = await response.text()
    data = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [item if item == "[DONE]" else json.loads(item) for item in data]


async def test_completions_give_the_same_ids_as_generate_for_the_same_seed_and_prompt(
    vllm: SimulatorProcess, tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    prompt = [5, 6, 7, 8]
    with running_simulator(tmp_path / "sglang", *FAST) as native:
        _, generated = await post(http, f"{native.url}/generate", {
            "input_ids": prompt, "sampling_params": {"max_new_tokens": 200}})  # fmt: skip
    status, body = await post(http, f"{vllm.url}/v1/completions", {
        "prompt": prompt, "max_tokens": 200, "return_token_ids": True})  # fmt: skip

    assert status == 200
    choice = body["choices"][0]
    assert choice["token_ids"] == generated["output_ids"]
    assert choice["prompt_token_ids"] == prompt
    assert body["usage"]["completion_tokens"] == len(choice["token_ids"])
    if choice["finish_reason"] == "stop":  # EOS in the ids, not in the text, stop_reason null
        assert f"w{choice['token_ids'][-1]}" not in choice["text"].split()
        assert choice["stop_reason"] is None


async def test_without_return_token_ids_there_are_none(
    vllm: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    _, body = await post(http, f"{vllm.url}/v1/completions", {"prompt": [1, 2], "max_tokens": 9})
    assert "token_ids" not in body["choices"][0]


async def test_errors_models_and_metrics_are_vllms(
    vllm: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{vllm.url}/v1/completions", {"prompt": [1], "model": "x"})
    assert status == 404
    assert body["error"]["message"] == (
        "The model `x` does not exist. Valid aliases: sim/eagle-target-sim."
    )
    async with http.get(f"{vllm.url}/v1/models") as response:
        models = await response.json()
    assert models["data"][0]["max_model_len"] == 32768
    await post(http, f"{vllm.url}/v1/completions", {"prompt": [1, 2], "max_tokens": 5})
    async with http.get(f"{vllm.url}/metrics") as response:
        metrics = await response.text()
    assert "vllm:num_requests_running{" in metrics
    assert "vllm:num_requests_waiting{" in metrics
    generated = next(
        line for line in metrics.splitlines() if line.startswith("vllm:generation_tokens_total")
    )
    assert float(generated.split()[-1]) > 0
    async with http.post(f"{vllm.url}/generate", json={"input_ids": [1]}) as response:
        assert response.status == 404, "vLLM has no native /generate"


async def test_chat_splits_reasoning_and_returns_every_id(
    vllm: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{vllm.url}/v1/chat/completions", {
        "messages": MESSAGES, "max_tokens": 300, "return_token_ids": True})  # fmt: skip

    assert status == 200
    choice = body["choices"][0]
    message = choice["message"]
    assert message["reasoning"]
    assert body["prompt_token_ids"]
    ids = choice["token_ids"]
    assert body["usage"]["completion_tokens"] == len(ids)
    if choice["finish_reason"] == "stop":  # reasoning, the end-of-think id, content, EOS
        words = len(message["reasoning"].split()) + len(message["content"].split())
        assert words + 2 == len(ids)


async def test_a_chat_stream_carries_the_same_ids_and_ends_with_usage_and_done(
    vllm: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    request = {"messages": MESSAGES, "max_tokens": 300, "return_token_ids": True}
    _, whole = await post(http, f"{vllm.url}/v1/chat/completions", request)
    stream = await events(http, f"{vllm.url}/v1/chat/completions", request | {
        "stream": True, "stream_options": {"include_usage": True}})  # fmt: skip

    assert stream[-1] == "[DONE]"
    chunks = stream[:-1]
    assert chunks[0]["prompt_token_ids"] == whole["prompt_token_ids"]
    streamed = [i for c in chunks for choice in c["choices"] for i in choice.get("token_ids", [])]
    assert streamed == whole["choices"][0]["token_ids"]
    reasoning = "".join(
        c["choices"][0]["delta"].get("reasoning") or "" for c in chunks if c["choices"]
    )
    assert reasoning == whole["choices"][0]["message"]["reasoning"]
    assert chunks[-1]["usage"]["completion_tokens"] == len(streamed)


async def test_hosted_is_text_only_with_cost_and_reasoning_details(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path, *FAST, "--flavor", "hosted", "--reasoning") as sim:
        _, body = await post(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 300, "return_token_ids": True})  # fmt: skip

    choice = body["choices"][0]
    assert "token_ids" not in choice
    assert "prompt_token_ids" not in body
    assert choice["message"]["reasoning_details"][0]["text"] == choice["message"]["reasoning"]
    assert body["usage"]["cost"] > 0


async def test_hosted_rate_limits_with_retry_after(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(
        tmp_path, *FAST, "--flavor", "hosted", "--rate-limit-rate", "1", "--retry-after", "7"
    ) as sim:
        async with http.post(
            f"{sim.url}/v1/chat/completions", json={"messages": MESSAGES}
        ) as response:
            status, retry_after, body = (
                response.status,
                response.headers.get("Retry-After"),
                await response.json(),
            )

    assert status == 429
    assert retry_after == "7"
    assert body["error"]["code"] == 429


async def test_hosted_can_fail_inside_a_stream(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    with running_simulator(
        tmp_path, *FAST, "--flavor", "hosted", "--stream-error-rate", "1"
    ) as sim:
        stream = await events(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 50, "stream": True})  # fmt: skip

    assert "[DONE]" not in stream
    assert stream[-1]["error"]["code"] == 502
    assert stream[-1]["choices"][0]["finish_reason"] == "error"


@pytest.mark.parametrize("flavor", ["vllm", "sglang"])
@pytest.mark.parametrize("fault", ["--rate-limit-rate", "--stream-error-rate"])
def test_a_hosted_fault_on_another_flavor_is_refused_not_ignored(flavor: str, fault: str) -> None:
    args = build_parser().parse_args(["--flavor", flavor, fault, "0.5"])
    with pytest.raises(ValueError, match="use them with --flavor hosted"):
        config_from(args)
    hosted = config_from(build_parser().parse_args(["--flavor", "hosted", fault, "0.5"]))
    assert hosted.flavor.flavor == "hosted"


async def test_sglang_refuses_token_ids_in_a_chat_stream_with_its_flat_error(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path, *FAST, "--reasoning") as sim:
        status, body = await post(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 50, "stream": True,
            "return_token_ids": True})  # fmt: skip

    assert status == 400
    assert body["object"] == "error"
    assert body["code"] == 400
    assert "return_token_ids" in body["message"]


async def test_sglang_streams_the_ids_in_a_trailing_sglext_chunk(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path, *FAST, "--reasoning") as sim:
        stream = await events(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 300, "stream": True,
            "stream_options": {"include_usage": True},
            "return_output_ids_in_sglext": True})  # fmt: skip
        _, whole = await post(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 300, "return_token_ids": True})  # fmt: skip

    assert stream[-1] == "[DONE]"
    trailer = stream[-2]
    assert trailer["choices"] == []
    [output_ids] = trailer["sglext"]["output_ids"]
    choice = whole["choices"][0]
    assert output_ids == choice["response_token_ids"]
    assert choice["prompt_token_ids"]
    assert "token_ids" not in choice
    deltas = [e["choices"][0]["delta"] for e in stream[:-2] if e["choices"]]
    streamed = "".join(d.get("reasoning_content") or "" for d in deltas)
    assert streamed == choice["message"]["reasoning_content"]
    assert streamed
    usage = next(e["usage"] for e in stream[:-1] if e.get("usage"))
    assert usage["completion_tokens"] == len(output_ids)


async def test_sglang_does_not_check_the_model_name_as_a_router_sends_unknown(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    """sglang-router 0.3.2 sends `model: "unknown"`; SGLang serves it (trainers-and-servers)."""
    with running_simulator(tmp_path, *FAST) as sim:
        status, body = await post(http, f"{sim.url}/v1/chat/completions", {
            "messages": MESSAGES, "max_tokens": 20, "model": "unknown"})  # fmt: skip
        completion_status, _ = await post(http, f"{sim.url}/v1/completions", {
            "prompt": [1, 2], "max_tokens": 5, "model": "unknown"})  # fmt: skip

    assert (status, completion_status) == (200, 200), body
    assert body["choices"][0]["message"]["content"]


async def test_sglang_v1_refuses_prompt_and_max_tokens_past_the_context_without_clamping(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path, *FAST, "--context-length", "40") as sim:
        status, body = await post(http, f"{sim.url}/v1/completions", {
            "prompt": list(range(30)), "max_tokens": 20})  # fmt: skip

    assert status == 400
    assert body["object"] == "error"
    assert body["message"].startswith(
        "Requested token count exceeds the model's maximum context length of 40 tokens."
    )
