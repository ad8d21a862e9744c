"""One definition of a response line: the fast reading agrees with json.loads on every line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.datasets.response_lines import (
    MAX_LINE_BYTES,
    MAX_RESPONSE_TOKENS,
    ResponseLine,
    check_record,
    parse_response,
    parse_response_line,
    response_tokens,
    why_not_response,
)


def reference(line: bytes) -> tuple[str, int, list[int]] | None:
    """What the definition says, by plain json.loads and the record checks."""
    try:
        record = json.loads(line.decode())
    except (ValueError, RecursionError):
        return None
    checked = check_record(record)
    return (
        (checked.id, checked.tokens, record["output_ids"])
        if isinstance(checked, ResponseLine)
        else None
    )


def parsed(line: bytes) -> tuple[str, int, list[int]] | None:
    response = parse_response_line(line)
    if response is None:
        return None
    text = response.ids_text()
    return response.id, response.tokens, [int(i) for i in text.split(b",")] if text else []


ids = st.one_of(st.text(max_size=12), st.integers(-(10**6), 10**6))
counts = st.one_of(
    st.integers(-5, MAX_RESPONSE_TOKENS + 5), st.none(), st.floats(0, 10), st.text(max_size=3),
    st.booleans(),
)  # fmt: skip
token_ids = st.one_of(st.integers(-3, 2**40), st.booleans(), st.floats(0, 5), st.text(max_size=2))
records = st.fixed_dictionaries(
    {"id": ids},
    optional={
        "output_ids": st.one_of(st.lists(st.integers(0, 2**20), max_size=30),
                                st.lists(token_ids, max_size=5), st.text(max_size=3)),
        "completion_tokens": counts,
        "meta_info": st.fixed_dictionaries(
            {"id": st.text(max_size=5), "completion_tokens": st.integers(0, 99)}
        ),
        "note": st.text(max_size=20),
    },
)  # fmt: skip


@given(records, st.booleans())
def test_fast_and_slow_paths_agree_on_records(record: dict[str, Any], compact: bool) -> None:
    line = json.dumps(record, separators=(",", ":") if compact else None).encode()
    assert parsed(line + b"\n") == reference(line)


id_list_text = st.text(alphabet="0123456789, ", max_size=40)
tails = st.sampled_from(
    [b"}", b',"completion_tokens":3}', b',"completion_tokens":-1}', b',"x":[1,2}',
     b',"completion_tokens":2,"id":"other"}', b',"completion_tokens":null}', b"", b"]}"]
)  # fmt: skip


@settings(max_examples=500)
@given(id_list_text, tails, st.sampled_from([b'"p1"', b"7", b'"a\\"b"', b'"\\u00e9"', b"01"]))
def test_the_fast_grammar_of_id_lists_is_json_s(text: str, tail: bytes, raw_id: bytes) -> None:
    line = b'{"id":' + raw_id + b',"output_ids":[' + text.encode() + b"]" + tail
    assert parsed(line) == reference(line)


def test_the_runners_own_lines_take_the_fast_path_and_read_right() -> None:
    record = {"id": "p1", "output_ids": [0, 10, 5, 0], "completion_tokens": 4, "finish_reason": "stop",
              "meta_info": {"id": "rid", "completion_tokens": 4}}  # fmt: skip
    response = parse_response_line(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    assert response == ResponseLine("p1", 4, b"0,10,5,0")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"id":"a","output_ids":[1],"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"id":"a","output_ids":[1,2],"completion_tokens":-2}', "completion_tokens is -2"),
        (b'{"id":"a","output_ids":[1,2],"completion_tokens":99999999999}', "not a count from 0"),
        (b'{"id":"a","output_ids":[1,2],"completion_tokens":2.5}', "completion_tokens is 2.5"),
        (b'{"id":"a","output_ids":[1,-2]}', "output_ids holds -2"),
        (b'{"id":"a","output_ids":[1,true]}', "output_ids holds true"),
        (b'{"id":"a","output_ids":[1,"2"]}', 'output_ids holds "2"'),
        (b'{"id":"a","output_ids":[[1]]}', "output_ids holds a JSON list"),
        (b'{"id":"a","output_ids":"1,2"}', 'output_ids is "1,2", not a list'),
        (b'{"id":"a","output_ids":{"0":1}}', "output_ids is a JSON object"),
        (b'{"id":"a"}', "no output_ids list"),
        (b'{"output_ids":[1]}', "no id"),
        (b'{"id":null,"output_ids":[1]}', "id is null"),
        (b'{"id":1' + b"0" * 5000 + b',"output_ids":[1],"completion_tokens":1}', "not JSON"),
        (b'{"id":"' + b"x" * 2000 + b'","output_ids":[1]}', "an id of 2,000 characters"),
        (b'{"id":"a","output_ids":[1,' + b"9" * 4301 + b"]}", "not JSON"),
        (b'{"id":"a","output_ids":[1,,2],"completion_tokens":2}', "not JSON"),
        (b'{"id":"a","output_ids":[1,02],"completion_tokens":2}', "not JSON"),
        (b'{"id":"a","output_ids":[1],"completion_tokens":1} trailing', "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"null", "a JSON null, not an object"),
    ],
)  # fmt: skip
def test_hostile_lines_are_not_responses_and_say_why(line: bytes, why: str) -> None:
    assert parse_response(line) is None
    assert why in why_not_response(line)


def test_a_line_longer_than_the_window_is_not_a_response() -> None:
    line = b'{"id":"a","output_ids":[' + b"1," * (MAX_LINE_BYTES // 2) + b"1]}"
    assert parse_response(line) is None
    assert "longer than" in why_not_response(line)


def test_a_torn_line_glued_to_the_next_is_never_read_as_either() -> None:
    whole = b'{"id":"p2","output_ids":[4,5],"completion_tokens":2,"finish_reason":"stop"}'
    for cut in range(1, len(whole)):
        glued = whole[:cut].replace(b"p2", b"p1") + whole
        assert parse_response(glued) is None, glued


def test_meta_info_first_does_not_fool_the_fast_path() -> None:
    line = b'{"meta_info":{"id":"rid","completion_tokens":5},"id":"p1","output_ids":[1,2,3]}'
    assert parse_response(line) == ("p1", 3)


def test_response_tokens_of_decoded_records() -> None:
    assert response_tokens({"id": "a", "output_ids": [1, 2], "completion_tokens": None}) == 2
    assert response_tokens({"id": "a", "output_ids": [1, 2], "completion_tokens": -1}) is None


@settings(max_examples=300)
@given(id_list_text, tails)
def test_the_bytes_methods_fallback_reads_the_same(text: str, tail: bytes) -> None:
    import agent.datasets.byte_scan as byte_scan

    line = b'{"id":"p","output_ids":[' + text.encode() + b"]" + tail
    with_libc = parsed(line)
    saved = byte_scan._ADDRESS
    byte_scan._ADDRESS = byte_scan._no_address  # as where ctypes or the C library is missing
    try:
        assert parsed(line) == with_libc == reference(line)
    finally:
        byte_scan._ADDRESS = saved


@pytest.mark.parametrize("libc", [True, False])
def test_byte_scan_stops_at_nothing(libc: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.datasets.byte_scan as byte_scan

    if not libc:
        monkeypatch.setattr(byte_scan, "_ADDRESS", byte_scan._no_address)
    data = byte_scan.CBytes(b"12,3\x00,,5,0]")
    assert (data.span(0, b"0123456789,"), data.span(5, b"0123456789,")) == (4, 5)
    assert (data.find(b",,"), data.find(b",0"), data.find(b",0", 9), data.find(b"]")) == (
        5,
        8,
        -1,
        10,
    )
    assert byte_scan.CBytes(b"\x00\x00,,").find(b",,") == 2
    with pytest.raises(IndexError):
        data.span(12, b"0")  # past the end: never handed to the C library


@pytest.mark.parametrize(
    "ids",
    [b"0, 10, 5, 0", b"0,10, 5,0", b"0 ,10", b"0,  10", b" 0, 10", b"0, 10 ", b"0, ,10", b"0 10"],
)
def test_spaces_in_an_id_list_read_as_json_reads_them(ids: bytes) -> None:
    line = b'{"id": "p1", "output_ids": [' + ids + b'], "completion_tokens": 4}'
    assert parsed(line) == reference(line)


def test_json_dumps_default_layout_takes_the_fast_path() -> None:
    line = json.dumps({"id": "p1", "output_ids": [0, 10, 5, 0], "completion_tokens": 4}).encode()
    assert parse_response_line(line) == ResponseLine("p1", 4, b"0,10,5,0")
