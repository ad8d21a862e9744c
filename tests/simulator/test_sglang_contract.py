"""One test per SGLang 0.5 behaviour the simulator copies, each citing the source line it copies.

Paths are under `sglang/` in the sglang 0.5.23 wheel unless another version is named
(../shared/reference/sglang-0.5-wire.md lists them all).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.json_http import post
from tests.support.simulator_process import running_simulator

FAST = ("--speed", "50", "--mean-tokens", "40", "--sd-tokens", "5", "--vocab-size", "1000")


async def get(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    async with http.get(url, headers=headers) as response:
        return response.status, await response.text()


def generate(max_new_tokens: int = 8, **extra: Any) -> dict[str, Any]:
    return {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": max_new_tokens, **extra}}


# ---------------------------------------------------------------- request validation


async def test_unknown_sampling_keys_are_refused_with_a_string_error(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # api/v1/api_types.py:97-108 (serde's unknown_field text), :1256 (the field order),
    # :1319-1320 (unknown keys raise); srt/entrypoints/http_server.py:937-939 (400, bare string),
    # before the stream starts, so even stream=True gets plain JSON.
    with running_simulator(tmp_path, *FAST) as sim:
        for stream in (False, True):
            body = generate(max_tokens=5) | {"stream": stream}
            status, answer = await post(http, f"{sim.url}/generate", body)
            assert status == 400
            assert isinstance(answer["error"], str)
            assert answer["error"].startswith(
                "unknown field `max_tokens`, expected one of `max_new_tokens`, `stop`, "
            )


async def test_wrongly_typed_sampling_values_are_refused_by_the_contract_gate(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # api/v1/api_types.py:30-50 (_unexpected, _invalid_type), :1273-1274 (top_p is an f64)
    with running_simulator(tmp_path, *FAST) as sim:
        status, answer = await post(http, f"{sim.url}/generate", generate(top_p="0.9"))
    assert (status, answer) == (400, {"error": 'invalid type: string "0.9", expected f64'})


@pytest.mark.parametrize(
    ("params", "message"),
    [  # srt/sampling/sampling_params.py:255-260, 286-289
        ({"top_p": 1.5}, "top_p must be in (0, 1], got 1.5."),
        ({"top_p": 0}, "top_p must be in (0, 1], got 0.0."),
        ({"temperature": -0.5}, "temperature must be a non-negative finite number, got -0.5."),
        ({"max_new_tokens": -1}, "max_new_tokens must be at least 0, got -1."),
    ],
)
async def test_out_of_range_sampling_is_a_400_with_sglang_message(
    tmp_path: Path, http: aiohttp.ClientSession, params: dict[str, Any], message: str
) -> None:
    # a ValueError while tokenizing -> 400 {"error": {"message"}} (http_server.py:2246-2250)
    with running_simulator(tmp_path, *FAST) as sim:
        status, answer = await post(
            http, f"{sim.url}/generate", {"input_ids": [1, 2], "sampling_params": params}
        )
    assert (status, answer) == (400, {"error": {"message": message}})


async def test_empty_or_missing_input_is_refused(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(tmp_path, *FAST) as sim:
        empty = await post(http, f"{sim.url}/generate", {"input_ids": []})
        missing = await post(http, f"{sim.url}/generate", {"sampling_params": {}})
    assert empty == (400, {"error": {"message": "input_ids cannot be empty."}})  # io_struct.py:499
    assert missing == (  # io_struct.py:444-455
        400,
        {"error": {"message": "Either text, input_ids or input_embeds should be provided."}},
    )


async def test_the_two_context_length_messages(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    # srt/managers/tokenizer_manager.py:1338-1350 (input too long), 1353-1376 (with completion)
    with running_simulator(tmp_path, *FAST, "--context-length", "100") as sim:
        too_long = await post(http, f"{sim.url}/generate", {"input_ids": [1] * 100})
        too_many = await post(
            http,
            f"{sim.url}/generate",
            {"input_ids": [1] * 60, "sampling_params": {"max_new_tokens": 50}},
        )
    assert too_long == (
        400,
        {
            "error": {
                "message": "The input (100 tokens) is longer than the model's context length "
                "(100 tokens)."
            }
        },
    )
    assert too_many[1]["error"]["message"] == (
        "Requested token count exceeds the model's maximum context length of 100 tokens. You "
        "requested a total of 110 tokens: 60 tokens from the input messages and 50 tokens for "
        "the completion. Please reduce the number of tokens in the input messages or the "
        "completion to fit within the limit."
    )


async def test_an_error_inside_a_stream_is_an_sse_event_with_http_200(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # srt/entrypoints/http_server.py:947-975: status 200, data: {"error": {...}}, data: [DONE]
    with running_simulator(tmp_path, *FAST) as sim:
        body = generate(top_p=2.0) | {"stream": True}
        async with http.post(f"{sim.url}/generate", json=body) as response:
            status, raw = response.status, (await response.read()).decode()
    assert status == 200
    events = [block.removeprefix("data: ") for block in raw.strip().split("\n\n")]
    assert events[-1] == "[DONE]"
    assert json.loads(events[0]) == {
        "error": {
            "message": "top_p must be in (0, 1], got 2.0.",
            "type": "invalid_request_error",
            "code": 400,
            "retryable": False,
        }
    }


# ---------------------------------------------------------------- warm-up and API key


async def test_health_answers_503_during_warm_up_then_200(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # srt/entrypoints/http_server.py:735-736 (/health, /health_generate 503 while Starting),
    # :713-718 (/ready); "fired up" once warm (srt/entrypoints/http_server.py _wait_and_warmup)
    with running_simulator(tmp_path, "--speed", "1", "--warmup-s", "2") as sim:
        during = [(await get(http, sim.url + path))[0] for path in ("/health", "/ready")]
        while (await get(http, sim.url + "/health"))[0] != 200:
            await asyncio.sleep(0.05)
        after = (await get(http, sim.url + "/health_generate"))[0]
    assert during == [503, 503]
    assert after == 200
    assert "The server is fired up and ready to roll!" in sim.log_file.read_text()


async def test_api_key_guards_generate_and_info_but_not_health_or_metrics(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # srt/utils/auth.py:100-106 (health/ready/metrics exempt), :108-117 (Bearer check),
    # :191-201 (401 {"error": "Unauthorized"})
    good, bad = {"Authorization": "Bearer s3cret"}, {"Authorization": "Bearer wrong"}
    with running_simulator(tmp_path, *FAST, "--api-key", "s3cret") as sim:
        refused = [
            await post(http, f"{sim.url}/generate", generate()),
            await post(http, f"{sim.url}/generate", generate(), headers=bad),
        ]
        info = [(await get(http, sim.url + p))[0] for p in ("/server_info", "/model_info")]
        open_paths = [(await get(http, sim.url + p))[0] for p in ("/health", "/metrics")]
        allowed = await post(http, f"{sim.url}/generate", generate(), headers=good)
    assert refused == [(401, {"error": "Unauthorized"})] * 2
    assert info == [401, 401]
    assert open_paths == [200, 200]
    assert allowed[0] == 200


# ---------------------------------------------------------------- ranks, logs, info


async def test_dp_ranks_have_their_own_series_log_lines_and_internal_states(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # labels + dp_rank (srt/observability/metrics_collector.py:1382-1393); log prefix " DPn"
    # (srt/managers/scheduler.py:6279-6281); internal_states per DP with
    # effective_max_running_requests_per_dp (scheduler_components/internal_state.py:67-74);
    # top-level max_running_requests is the flag value, None when not given
    # (arg_groups/fields/schedule.py:31-34)
    with running_simulator(
        tmp_path, "--speed", "10", "--dp-size", "2", "--mean-tokens", "800", "--sd-tokens", "10"
    ) as sim:
        batch = [[i, i + 1] for i in range(8)]
        pending = asyncio.create_task(
            post(http, f"{sim.url}/generate", {"input_ids": batch, "sampling_params": {}})
        )
        both_busy = lambda m: list(_rank_values(m, "running").values()) == [4.0, 4.0]  # noqa: E731
        metrics = await _metrics_while(http, sim.url, both_busy)
        _, info_text = await get(http, sim.url + "/server_info")
        await pending
    assert _rank_values(metrics, "running") == {0: 4.0, 1: 4.0}
    info = json.loads(info_text)
    assert info["dp_size"] == 2
    assert info["max_running_requests"] is None
    assert [s["effective_max_running_requests_per_dp"] for s in info["internal_states"]] == [32, 32]
    log = sim.log_file.read_text()
    assert re.search(r"^\[[\d :-]+ DP0\] Prefill batch, #new-seq: 4,", log, re.M)
    assert re.search(r"^\[[\d :-]+ DP1\] Decode batch, #running-req: 4,", log, re.M)


async def _metrics_while(http: aiohttp.ClientSession, url: str, done: Any) -> str:
    while True:
        _, text = await get(http, url + "/metrics")
        if done(text):
            return text
        await asyncio.sleep(0.02)


def _rank_values(metrics: str, which: str) -> dict[int, float]:
    name = {"running": "num_running_reqs", "queued": "num_queue_reqs"}[which]
    pattern = rf'^sglang:{name}\{{[^}}]*dp_rank="(\d)"\}} ([\d.]+)$'
    return {int(rank): float(value) for rank, value in re.findall(pattern, metrics, re.M)}


async def test_hybrid_swa_models_log_full_and_swa_token_usage(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # managers/scheduler_components/pool_stats_observer.py:104-139
    with running_simulator(
        tmp_path, "--speed", "20", "--hybrid-swa", "--mean-tokens", "200"
    ) as sim:
        await post(http, f"{sim.url}/generate", {"input_ids": [[1], [2]], "sampling_params": {}})
    log = sim.log_file.read_text()
    assert re.search(
        r"\] Decode batch, #running-req: \d+, #full token: \d+, full token usage: \d\.\d\d, "
        r"#swa token: \d+, swa token usage: \d\.\d\d, cuda graph",
        log,
    )
    assert re.search(r"\] Prefill batch, .*full token usage: \d\.\d\d, swa token usage: ", log)
    assert "token usage" in log
    assert ", token usage:" not in log


async def test_deprecated_info_paths_answer_and_log_a_warning_each_call(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # srt/entrypoints/http_server.py:802-809 and 853-860; /get_load: sglang 0.5.8
    # http_server.py:601-608 with GetLoadReqOutput (scheduler_metrics_mixin.py:568-595)
    with running_simulator(tmp_path, *FAST, "--dp-size", "2") as sim:
        new = [await get(http, sim.url + p) for p in ("/server_info", "/model_info")]
        old = [await get(http, sim.url + p) for p in ("/get_server_info", "/get_model_info")]
        _, loads = await get(http, sim.url + "/get_load")
    assert [json.loads(t)["model_path"] for _, t in old] == [
        json.loads(t)["model_path"] for _, t in new
    ]
    assert [entry["dp_rank"] for entry in json.loads(loads)] == [0, 1]
    assert set(json.loads(loads)[0]) >= {"num_reqs", "num_waiting_reqs", "num_tokens", "ts_tic"}
    warnings = [line for line in sim.log_file.read_text().splitlines() if "deprecated" in line]
    assert [w.split("] ", 1)[1] for w in warnings] == [
        "Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
        "Please use '/server_info' instead.",
        "Endpoint '/get_model_info' is deprecated and will be removed in a future version. "
        "Please use '/model_info' instead.",
        "Endpoint '/get_load' is deprecated and will be removed in a future version. "
        "Please use '/v1/loads' instead.",
    ]


# ---------------------------------------------------------------- abort


async def test_abort_without_rid_aborts_nothing_and_logs_why(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # srt/entrypoints/http_server.py:1721-1731 (always 200); tokenizer_manager.py:2241-2245
    with running_simulator(tmp_path, "--speed", "5", "--mean-tokens", "200") as sim:
        pending = asyncio.create_task(
            post(http, f"{sim.url}/generate", generate(400, ignore_eos=True))
        )
        await _metrics_while(http, sim.url, lambda m: re.search(r"num_running_reqs\{.*\} 1\.0", m))
        async with http.post(f"{sim.url}/abort_request", json={}) as response:
            status = response.status
        _, answer = await pending
    assert status == 200
    assert answer["meta_info"]["finish_reason"]["type"] != "abort"
    assert "Ignore abort_request with empty rid and abort_all=False" in sim.log_file.read_text()


async def test_abort_messages_for_running_and_queued_requests(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # running: FINISH_ABORT() "Aborted"; queued: "Abort in waiting queue", meta_info without
    # prompt_tokens and cached_tokens (srt/managers/tokenizer_manager.py:3577-3637)
    with running_simulator(
        tmp_path, "--speed", "1", "--max-running-requests", "1", "--mean-tokens", "5000"
    ) as sim:
        url = f"{sim.url}/generate"
        first = asyncio.create_task(post(http, url, generate(9000) | {"rid": "run-1"}))
        await _metrics_while(http, sim.url, lambda m: re.search(r"num_running_reqs\{.*\} 1\.0", m))
        second = asyncio.create_task(post(http, url, generate(9000) | {"rid": "wait-1"}))
        await _metrics_while(http, sim.url, lambda m: re.search(r"num_queue_reqs\{.*\} 1\.0", m))
        async with http.post(f"{sim.url}/abort_request", json={"abort_all": True}):
            pass
        running, queued = (await first)[1], (await second)[1]
    assert running["meta_info"]["finish_reason"] == {
        "type": "abort", "message": "Aborted", "status_code": None, "err_type": None,
    }  # fmt: skip
    assert queued["meta_info"]["finish_reason"]["message"] == "Abort in waiting queue"
    assert "prompt_tokens" not in queued["meta_info"]


# ---------------------------------------------------------------- the scheduler's own limits


async def test_never_more_running_than_max_running_requests(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    with running_simulator(
        tmp_path, "--speed", "50", "--max-running-requests", "8", "--mean-tokens", "100"
    ) as sim:
        prompts = [[i, 1] for i in range(100)]
        status, _ = await post(
            http, f"{sim.url}/generate", {"input_ids": prompts, "sampling_params": {}}
        )
    assert status == 200
    running = [int(n) for n in re.findall(r"#running-req: (\d+)", sim.log_file.read_text())]
    admitted = [
        int(n) for n in re.findall(r"Prefill batch, #new-seq: (\d+)", sim.log_file.read_text())
    ]
    assert running
    assert max(running) <= 8
    assert max(admitted) <= 8
    assert sum(admitted) == 100


async def test_running_requests_do_not_spill_past_the_limit_when_a_slot_frees(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    # the defect seen while measuring: once one slot freed, the whole queue was admitted
    with running_simulator(
        tmp_path, "--speed", "50", "--max-running-requests", "4", "--mean-tokens", "60",
        "--sd-tokens", "40",
    ) as sim:  # fmt: skip
        url = f"{sim.url}/generate"
        answers = await asyncio.gather(
            *(post(http, url, generate(200) | {"input_ids": [i]}) for i in range(40))
        )
        _, metrics = await get(http, sim.url + "/metrics")
    assert all(status == 200 for status, _ in answers)
    running = [int(n) for n in re.findall(r"#running-req: (\d+)", sim.log_file.read_text())]
    assert max(running) <= 4
    assert "sglang:num_requests_total{" in metrics
