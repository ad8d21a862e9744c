"""The simulator's /flush_cache, the decode-pass accept length it resets, and the per-request spec
fields, each against the sglang 0.5.23 line it copies (paths under `sglang/srt/`; see
agent/simulator/flush.py and speculative.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.simulator.flush import ANOTHER_PENDING, FAILED_TEXT, FLUSHED_TEXT, TIMED_OUT
from tests.support.json_http import post
from tests.support.simulator_process import SimulatorProcess, running_simulator

DRAFTER = ("--speculative-accept-length", "2.5", "--speculative-num-draft-tokens", "4",
           "--mean-tokens", "400", "--sd-tokens", "1", "--vocab-size", "1000")  # fmt: skip


@pytest.fixture
def fast(tmp_path: Path) -> Iterator[SimulatorProcess]:
    with running_simulator(tmp_path, "--speed", "50", *DRAFTER) as sim:
        yield sim


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[SimulatorProcess]:
    """Speed 1: a 30,000-token answer runs for minutes, until it is aborted."""
    with running_simulator(tmp_path, "--speed", "1", *DRAFTER) as sim:
        yield sim


async def generate(http: aiohttp.ClientSession, url: str, tokens: int) -> dict[str, Any]:
    body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": tokens}}
    status, answer = await post(http, f"{url}/generate", body)
    assert status == 200
    result: dict[str, Any] = answer
    return result


async def avg_accept_length(http: aiohttp.ClientSession, url: str, path: str) -> Any:
    async with http.get(f"{url}{path}") as response:
        return (await response.json())["internal_states"][0].get("avg_spec_accept_length")


async def flush(http: aiohttp.ClientSession, url: str, query: str = "") -> tuple[int, str]:
    async with http.post(f"{url}/flush_cache{query}") as response:
        return response.status, await response.text()


@contextlib.asynccontextmanager
async def running_request(http: aiohttp.ClientSession, url: str) -> AsyncIterator[None]:
    """A long streamed request, inside the block from its first token until it is aborted."""
    body = {"input_ids": [9], "sampling_params": {"max_new_tokens": 30000}, "rid": "long",
            "stream": True}  # fmt: skip
    async with http.post(f"{url}/generate", json=body) as response:
        async for line in response.content:
            if line.startswith(b"data: {"):
                break  # a token came: the engine runs it
        try:
            yield
        finally:
            assert (await post(http, f"{url}/abort_request", {"rid": "long"}))[0] == 200
            chunks = [line async for line in response.content if line.startswith(b"data: {")]
            assert json.loads(chunks[-1][6:])["meta_info"]["finish_reason"]["type"] == "abort"


async def test_flush_resets_the_decode_pass_accept_length_that_needs_a_decode_line(
    fast: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    # internal_state.py:119-125, 243-253 (absent with no folded pass); metrics_reporter.py:934,
    # 996-1000 (folded in every 40 decode batches); scheduler.py:5518-5528 (reset_metrics)
    paths = ("/server_info", "/get_server_info")
    assert [await avg_accept_length(http, fast.url, p) for p in paths] == [None, None]
    short = (await generate(http, fast.url, 20))["meta_info"]  # 8 verify steps: no Decode line
    assert await avg_accept_length(http, fast.url, "/server_info") is None
    long = (await generate(http, fast.url, 300))["meta_info"]
    # what the answers say, not the drafter's configured 2.5 (2.6 configured, 2.57 answered)
    answered = [(m["completion_tokens"] - 1, m["spec_verify_ct"]) for m in (short, long)]
    said = sum(tokens for tokens, _ in answered) / sum(steps for _, steps in answered)
    assert said != 2.5
    assert [await avg_accept_length(http, fast.url, p) for p in paths] == [said, said]
    assert await flush(http, fast.url) == (200, FLUSHED_TEXT)  # http_server.py:1025-1041
    assert await avg_accept_length(http, fast.url, "/server_info") is None
    assert "Cache flushed successfully!" in fast.log_file.read_text()


async def test_a_busy_server_refuses_waits_or_times_out_as_its_timeout_says(
    slow: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    # flush_wrapper.py:22-60 and scheduler.py:5518-5545: no timeout refuses at once (an empty
    # message: http_server.py's "Flush cache failed."); a timeout waits for idle, then gives up
    async with running_request(http, slow.url):
        assert await flush(http, slow.url) == (400, FAILED_TEXT)
        assert await flush(http, slow.url, "?timeout=0.2") == (400, TIMED_OUT)
        waiting = asyncio.ensure_future(flush(http, slow.url, "?timeout=60"))
        while (second := await flush(http, slow.url))[1] != ANOTHER_PENDING:
            assert second == (400, FAILED_TEXT)  # until the first one waits
        assert not waiting.done()
    assert await waiting == (200, FLUSHED_TEXT)  # the abort left it idle: the flush went ahead
    log = slow.log_file.read_text()
    assert (
        "Cache not flushed because there are pending requests. #queue-req: 0, #running-req: 1"
        in log
    )
    assert "Deferred flush_cache timed out while waiting for idle state." in log


@pytest.mark.parametrize(
    ("method", "query", "status"),
    [("GET", "", 200), ("PUT", "", 405), ("POST", "?timeout=-1", 400), ("POST", "?timeout=x", 400)],
)
async def test_flush_takes_get_and_post_and_a_timeout_from_0(
    fast: SimulatorProcess, http: aiohttp.ClientSession, method: str, query: str, status: int
) -> None:
    # http_server.py:1025-1027: api_route GET/POST, timeout: float = Query(0.0, ge=0.0); a bad
    # query is a validation error, 400 (http_server.py:634-692)
    async with http.request(method, f"{fast.url}/flush_cache{query}") as response:
        assert response.status == status


async def test_meta_info_has_the_histogram_and_sglang_sums(
    fast: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    # tokenizer_manager.py:3149-3201; schedule_batch.py:1566-1572 (entry k: steps accepting k
    # drafts); batch_result_processor.py:826-836 (one entry per verify step); the prefill's token
    # is in completion_tokens but in no step
    meta = (await generate(http, fast.url, 128))["meta_info"]
    keys = list(meta)
    assert keys[keys.index("e2e_latency") + 1 :] == [
        "spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts",
        "spec_num_proposed_drafts", "spec_verify_ct", "spec_correct_drafts_histogram",
    ]  # fmt: skip
    steps, histogram = meta["spec_verify_ct"], meta["spec_correct_drafts_histogram"]
    assert sum(histogram) == steps
    assert sum(k * n for k, n in enumerate(histogram)) == meta["spec_num_correct_drafts"]
    assert meta["spec_num_correct_drafts"] + steps == meta["completion_tokens"] - 1
    assert len(histogram) <= 4  # never more accepted than the 3 drafts proposed
    assert meta["spec_accept_length"] == meta["completion_tokens"] / steps
    assert (meta["completion_tokens"] - 1) / steps == pytest.approx(2.5, rel=0.03)


async def test_an_answer_of_the_prefill_token_alone_has_no_spec_fields(
    fast: SimulatorProcess, http: aiohttp.ClientSession
) -> None:
    # tokenizer_manager.py:3149-3153: only with spec_verify_ct > 0
    meta = (await generate(http, fast.url, 1))["meta_info"]
    assert meta["completion_tokens"] == 1
    assert not [key for key in meta if key.startswith("spec_")]
