"""The fast reading of response lines agrees with json.loads on every line it accepts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agent.datasets.response_lines import parse_response, response_tokens

ids = st.one_of(st.text(max_size=12), st.integers(-(10**6), 10**6))
records = st.fixed_dictionaries(
    {"id": ids},
    optional={
        "output_ids": st.lists(st.integers(0, 2**20), max_size=30),
        "completion_tokens": st.integers(0, 10**6),
        "meta_info": st.fixed_dictionaries(
            {"id": st.text(max_size=5), "completion_tokens": st.integers(0, 99)}
        ),
        "note": st.text(max_size=20),
    },
)


@given(records, st.booleans())
def test_fast_and_slow_paths_agree(record: dict[str, Any], compact: bool) -> None:
    line = json.dumps(record, separators=(",", ":") if compact else None).encode()
    expected_tokens = response_tokens(record)
    expected = (str(record["id"]), expected_tokens) if expected_tokens is not None else None
    assert parse_response(line + b"\n") == expected


@given(st.binary(max_size=200))
def test_garbage_is_never_a_response_by_accident(line: bytes) -> None:
    parsed = parse_response(line)
    if parsed is not None:
        record = json.loads(line)
        assert (str(record["id"]), response_tokens(record)) == parsed


def test_meta_info_first_does_not_fool_the_fast_path() -> None:
    line = b'{"meta_info":{"id":"rid","completion_tokens":5},"id":"p1","output_ids":[1,2,3]}'
    assert parse_response(line) == ("p1", 3)


def test_a_torn_line_glued_to_the_next_is_not_read_fast() -> None:
    torn = b'{"id":"p1","output_ids":[1,2,3'
    whole = b'{"id":"p2","output_ids":[4,5],"completion_tokens":2,"finish_reason":"stop"}'
    assert parse_response(whole) == ("p2", 2)
    assert parse_response(torn + whole) is None
