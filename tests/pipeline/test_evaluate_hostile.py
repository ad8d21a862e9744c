"""The evaluation believes no answer unchecked: -500 completion tokens reported -11,346 tok/s and
a -145x speedup with exit 0, and a stream event that was a JSON list gave a 37-line traceback."""

from __future__ import annotations

import aiohttp
import pytest

from agent.pipeline.evaluate.measure import Request, send
from tests.support.loopback_app import answering_generate

ANSWERS = {
    "negative": '{"output_ids": [1], "meta_info": {"completion_tokens": -500}}',
    "huge": '{"output_ids": [1], "meta_info": {"completion_tokens": 1000000000000}}',
    "nan": '{"output_ids": [1], "meta_info": {"completion_tokens": 1, "x": NaN}}',
    "list_event": "data: [1, 2, 3]\n\ndata: [DONE]\n\n",
    "past_the_limit": '{"output_ids": [7] , "meta_info": {"completion_tokens": 1024}}'.replace(
        "[7] ", str([7] * 1024)
    ),
    "past_the_limit_stream": 'data: {"output_ids": [7], "meta_info": {"completion_tokens": 1024}}'
    "\n\ndata: [DONE]\n\n",
}


@pytest.mark.parametrize(
    ("kind", "said"),
    [("negative", "completion_tokens is -500, not a count"),
     ("huge", "completion_tokens is 1,000,000,000,000, not a count"),
     ("nan", "NaN is not JSON"),
     ("list_event", "a stream event is JSON list, not an object"),
     ("past_the_limit", "1,024 tokens for max_new_tokens 8: the server ignores the limit"),
     ("past_the_limit_stream", "1,024 tokens for max_new_tokens 8: the server ignores the limit")],
)  # fmt: skip
async def test_a_hostile_answer_is_an_error_with_its_reason_never_a_figure(
    kind: str, said: str
) -> None:
    request = Request(max_new_tokens=8, temperature=0.0, stream=kind.endswith(("event", "stream")))
    async with answering_generate(ANSWERS[kind]) as url, aiohttp.ClientSession() as session:
        answer = await send(session, url, [1, 2], request)
    assert answer.error is not None
    assert said in answer.error
