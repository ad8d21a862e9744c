"""The simulator answers in SGLang's wire format, so what passes here passes against SGLang."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.json_http import post
from tests.support.simulator_process import SimulatorProcess, running_simulator

DECODE_LINE = re.compile(  # SGLang 0.5.23 metrics_reporter.py:963-1041, tp_size 1: no TP in the prefix
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] Decode batch, #running-req: \d+, #token: \d+, "
    r"token usage: \d\.\d\d, cuda graph: True, gen throughput \(token/s\): [\d.]+, #queue-req: \d+$"
)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimulatorProcess]:
    with running_simulator(
        tmp_path,
        "--speed",
        "5",
        "--mean-tokens",
        "200",
        "--sd-tokens",
        "20",
        "--vocab-size",
        "1000",
    ) as process:
        yield process


async def test_single_generate_has_top_level_output_ids_and_meta_info(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{sim.url}/generate", {
        "input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 64}, "rid": "r-1",
    })  # fmt: skip
    assert status == 200
    meta = body["meta_info"]
    assert meta["id"] == "r-1"
    assert meta["prompt_tokens"] == 3
    assert meta["completion_tokens"] == len(body["output_ids"]) <= 64
    assert meta["finish_reason"]["type"] in ("stop", "length")
    assert all(0 <= token < 1000 for token in body["output_ids"])
    assert body["text"].split() == [f"w{token}" for token in body["output_ids"]]
    assert meta["e2e_latency"] > 0


async def test_batches_answer_with_a_list_and_text_prompts_work(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{sim.url}/generate", {
        "text": ["hello there", "write a poem about the sea"], "sampling_params": {"max_new_tokens": 8},
    })  # fmt: skip
    assert status == 200
    assert [item["meta_info"]["prompt_tokens"] for item in body] == [2, 6]


async def test_the_same_prompt_gets_the_same_answer(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    request = {"input_ids": [9, 9, 9], "sampling_params": {"max_new_tokens": 300}}
    first = (await post(http, f"{sim.url}/generate", request))[1]
    second = (await post(http, f"{sim.url}/generate", request))[1]
    assert first["output_ids"] == second["output_ids"]


async def test_stream_sends_cumulative_chunks_then_done(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    request = {"input_ids": [5, 6], "sampling_params": {"max_new_tokens": 400}, "stream": True}
    async with http.post(f"{sim.url}/generate", json=request) as response:
        raw = (await response.read()).decode()
    events = [block.removeprefix("data: ") for block in raw.strip().split("\n\n")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    lengths = [len(chunk["output_ids"]) for chunk in chunks]
    assert lengths == sorted(lengths)
    assert len(chunks) > 1
    assert all(chunk["meta_info"]["finish_reason"] is None for chunk in chunks[:-1])
    assert chunks[-1]["meta_info"]["finish_reason"] is not None


async def test_too_long_prompts_get_a_400_with_sglang_message(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{sim.url}/generate", {
        "input_ids": [1] * 40000, "sampling_params": {"max_new_tokens": 10},
    })  # fmt: skip
    assert status == 400
    assert body["error"]["message"] == (  # tokenizer_manager.py:1347-1350
        "The input (40000 tokens) is longer than the model's context length (32768 tokens)."
    )


async def test_info_health_metrics_and_flush(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    for path in ("/health", "/health_generate"):
        async with http.get(sim.url + path) as response:
            assert response.status == 200
    for path in ("/get_server_info", "/server_info"):
        async with http.get(sim.url + path) as response:
            info = await response.json()
            assert info["max_running_requests"] is None  # the flag was not given
            assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 64
    for path in ("/get_model_info", "/model_info"):
        async with http.get(sim.url + path) as response:
            assert (await response.json())["is_generation"] is True
    await post(
        http, f"{sim.url}/generate", {"input_ids": [1], "sampling_params": {"max_new_tokens": 5}}
    )
    async with http.get(sim.url + "/metrics") as response:
        metrics = await response.text()
    assert re.search(r'^sglang:num_requests_total\{model_name="[^"]+".*\} 1\.0$', metrics, re.M)
    assert "# TYPE sglang:gen_throughput gauge" in metrics
    async with http.post(sim.url + "/flush_cache") as response:
        assert response.status == 200
        assert (await response.text()).startswith("Cache flushed.")


async def test_abort_returns_the_partial_answer_with_abort_reason(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    import asyncio

    request = {"input_ids": [7], "sampling_params": {"max_new_tokens": 30000}, "rid": "long-one"}
    pending = asyncio.create_task(post(http, f"{sim.url}/generate", request))
    while True:  # until the engine runs it
        async with http.get(sim.url + "/metrics") as response:
            if re.search(r"^sglang:num_running_reqs\{.*\} 1\.0$", await response.text(), re.M):
                break
    status, _ = await post(http, f"{sim.url}/abort_request", {"rid": "long-one"})
    assert status == 200
    _, body = await pending
    assert body["meta_info"]["finish_reason"]["type"] == "abort"
    assert body["meta_info"]["completion_tokens"] < 30000


async def test_the_log_has_sglang_decode_and_prefill_lines(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    await post(
        http,
        f"{sim.url}/generate",
        {"input_ids": [[1], [2], [3]], "sampling_params": {"max_new_tokens": 400}},
    )
    lines = sim.log_file.read_text().splitlines()
    assert any(DECODE_LINE.match(line) for line in lines), lines[:5]
    assert any("] Prefill batch, #new-seq: 3, #new-token: 3, " in line for line in lines)
    assert any(line.endswith("The server is fired up and ready to roll!") for line in lines)


async def test_admin_faults_validate_and_apply(
    sim: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    status, body = await post(http, f"{sim.url}/admin/faults", {"eror_rate": 1})
    assert status == 400
    assert "unknown fault 'eror_rate'" in body["error"]["message"]
    assert (await post(http, f"{sim.url}/admin/faults", {"error_rate": 1.0}))[0] == 200
    status, body = await post(http, f"{sim.url}/generate", {"input_ids": [1]})
    assert status == 500
    assert body == {  # an HTTPException's ErrorResponse (http_server.py:578-631)
        "object": "error", "message": "simulated internal server error", "type": "500",
        "param": None, "code": 500,
    }  # fmt: skip
