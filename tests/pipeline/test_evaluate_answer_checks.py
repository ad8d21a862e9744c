"""The evaluation takes no figure from an answer it cannot believe: a failed request with its reason,
never a traceback, never a figure.

Before: a body or a stream event nested 100,000 deep raised RecursionError out of the level, a
traceback instead of a failed request; 4,194,304 completion tokens for one output id counted as
4,194,304 tokens, a tokens/s and a speedup no server made.
"""

from __future__ import annotations

import aiohttp
import pytest

from agent.pipeline.evaluate.measure import Request, send
from tests.support.loopback_app import answering_generate

DEEP = "[" * 100_000 + "]" * 100_000
ANSWERS = {
    "body": '{"output_ids": [1], "meta_info": {"completion_tokens": 1, "x": ' + DEEP + "}}",
    "event": f"data: {DEEP}\n\ndata: [DONE]\n\n",
}


@pytest.mark.parametrize("where", ["body", "event"])
async def test_a_deeply_nested_answer_is_a_failed_request_with_its_reason(where: str) -> None:
    request = Request(max_new_tokens=8, temperature=0.0, stream=where == "event")
    async with answering_generate(ANSWERS[where]) as url, aiohttp.ClientSession() as session:
        answer = await send(session, url, [1, 2], request)
    assert answer.completion_tokens == 0
    assert answer.error is not None
    nesting = "RecursionError: maximum recursion depth exceeded"
    containers = "ValueError: it holds "  # past the cap on lists and objects, refused unparsed
    assert answer.error.startswith((nesting, containers)), answer.error
    assert "\n" not in answer.error


async def test_a_count_the_output_ids_do_not_bear_out_is_a_failed_request() -> None:
    body = '{"output_ids": [1], "meta_info": {"completion_tokens": 4194304}}'
    request = Request(max_new_tokens=8, temperature=0.0, stream=False)
    async with answering_generate(body) as url, aiohttp.ClientSession() as session:
        answer = await send(session, url, [1, 2], request)
    assert (answer.completion_tokens, answer.error) == (
        0,
        "completion_tokens 4,194,304 for 1 output ids",
    )
