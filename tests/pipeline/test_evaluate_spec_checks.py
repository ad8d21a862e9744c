"""No speculative figure from a field the evaluation cannot believe: each wrong field of an answer's
meta_info or of /server_info is a missing figure with the rest kept, never an exception."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web

from agent.pipeline.evaluate.measure import Request, send
from agent.pipeline.evaluate.server_state import reading_of
from agent.pipeline.evaluate.spec_meta import SpecMeta, spec_meta
from tests.support.loopback_app import serving

GOOD = {"spec_verify_ct": 4, "spec_accept_length": 2.25, "spec_num_correct_drafts": 4,
        "spec_num_proposed_drafts": 12, "spec_correct_drafts_histogram": [0, 4]}  # fmt: skip
"""What SGLang 0.5.23 sends for 9 tokens in 4 verify steps (tokenizer_manager.py ~3155-3201)."""


def test_sglangs_fields_are_read_whole() -> None:
    assert spec_meta({"completion_tokens": 9, **GOOD}) == SpecMeta(4, 2.25, 4, 12, (0, 4))
    assert spec_meta({"completion_tokens": 9}) is None  # no drafter: no spec fields


@pytest.mark.parametrize(
    ("field", "value", "left"),
    [("spec_accept_length", "2.25", SpecMeta(4, None, 4, 12, (0, 4))),
     ("spec_accept_length", True, SpecMeta(4, None, 4, 12, (0, 4))),
     ("spec_accept_length", 0, SpecMeta(4, None, 4, 12, (0, 4))),
     ("spec_accept_length", 1e9, SpecMeta(4, None, 4, 12, (0, 4))),
     ("spec_verify_ct", 4.0, SpecMeta(None, 2.25, 4, 12, None)),  # the histogram sums to nothing
     ("spec_verify_ct", -4, SpecMeta(None, 2.25, 4, 12, None)),
     ("spec_num_correct_drafts", 13, SpecMeta(4, 2.25, None, None, (0, 4))),  # more than proposed
     ("spec_num_proposed_drafts", 0, SpecMeta(4, 2.25, None, None, (0, 4))),
     ("spec_num_proposed_drafts", 10**13, SpecMeta(4, 2.25, None, None, (0, 4))),
     ("spec_correct_drafts_histogram", [0, 3], SpecMeta(4, 2.25, 4, 12, None)),  # 3 steps, not 4
     ("spec_correct_drafts_histogram", [0, -1, 5], SpecMeta(4, 2.25, 4, 12, None)),
     ("spec_correct_drafts_histogram", [0, "4"], SpecMeta(4, 2.25, 4, 12, None)),
     ("spec_correct_drafts_histogram", {"1": 4}, SpecMeta(4, 2.25, 4, 12, None)),
     ("spec_correct_drafts_histogram", [4] + [0] * 300, SpecMeta(4, 2.25, 4, 12, None))],
)  # fmt: skip
def test_a_wrong_field_is_left_out_and_the_others_kept(
    field: str, value: Any, left: SpecMeta
) -> None:
    assert spec_meta(GOOD | {field: value}) == left


async def test_an_answer_with_wrong_spec_fields_still_counts_its_tokens() -> None:
    body = {"output_ids": [5] * 9, "meta_info": {"completion_tokens": 9, **GOOD,
                                                 "spec_accept_length": "lots"}}  # fmt: skip

    async def generate(request: web.Request) -> web.Response:
        return web.json_response(body)

    app = web.Application()
    app.router.add_post("/generate", generate)
    request = Request(max_new_tokens=9, temperature=0.0, stream=False)
    async with serving(app) as url, aiohttp.ClientSession() as session:
        answer = await send(session, url, [1], request)
    assert (answer.error, answer.completion_tokens) == (None, 9)
    assert answer.spec == SpecMeta(4, None, 4, 12, (0, 4))


@pytest.mark.parametrize(
    ("info", "figure", "why"),
    [({"internal_states": [{"avg_spec_accept_length": 2.5}]}, 2.5, None),
     ({"decode": [{"internal_states": [{"avg_spec_accept_length": 2.2}]}]}, 2.2, None),  # PD
     ({"internal_states": [{"avg_spec_accept_length": 3}, {"avg_spec_accept_length": 1.5}]}, 2.25, None),
     ({"internal_states": [{"avg_spec_accept_length": 3}, {}, {}]}, None, "DP rank(s) 1, 2 of 3 reported none"),
     ({"internal_states": [{}, {}]}, None, "the server reported none"),
     ({"internal_states": [{}]}, None, "the server reported none"),
     ({"internal_states": [{"avg_spec_accept_length": "2.5"}]}, None, "avg_spec_accept_length is '2.5'"),
     ({"internal_states": [{"avg_spec_accept_length": True}]}, None, "avg_spec_accept_length is True"),
     ({"internal_states": [{"avg_spec_accept_length": -1}]}, None, "avg_spec_accept_length -1 is out of range"),
     ({"internal_states": [{"avg_spec_accept_length": 1e300}]}, None, "avg_spec_accept_length 1e+300 is out"),
     ({"internal_states": []}, None, "/server_info has no internal_states"),
     ({"internal_states": ["x"]}, None, "/server_info has no internal_states"),
     ({"internal_states": {"0": {}}}, None, "/server_info has no internal_states"),
     ([1, 2], None, "/server_info has no internal_states"),
     ({"decode": []}, None, "/server_info has no internal_states")],
)  # fmt: skip
def test_the_server_count_is_every_ranks_when_each_is_a_number_in_range(
    info: Any, figure: float | None, why: str | None
) -> None:
    reading = reading_of(info)
    assert reading.accept_length == figure
    assert (reading.unavailable or "").startswith(why or ""), reading.unavailable
    assert (reading.unavailable is None) == (why is None)
