"""The wire contract: golden lines for every message, and clear errors for every bad line."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.protocol import (
    EVENTS,
    MAX_LINE_BYTES,
    METHODS,
    ErrorCode,
    Event,
    LineFramer,
    Message,
    Method,
    OversizedLine,
    PingParams,
    PingResult,
    ProtocolError,
    Request,
    Response,
    bundle_digest,
    decode,
    encode,
    parse_result,
)
from tests.support.golden_requests import GOLDEN_REQUESTS
from tests.support.golden_results import DATASET, GOLDEN_OTHERS, GOLDEN_RESULTS, SNAPSHOT


@pytest.mark.parametrize(
    ("request_", "golden"), GOLDEN_REQUESTS, ids=lambda v: getattr(v, "method", "")
)
def test_every_request_round_trips_through_its_golden_line(
    request_: Request[object], golden: str
) -> None:
    assert encode(request_) == golden.encode() + b"\n"
    assert decode(golden) == request_


@pytest.mark.parametrize(("method", "result", "golden"), GOLDEN_RESULTS, ids=lambda v: str(v)[:8])
def test_every_result_round_trips_through_its_golden_line(
    method: str, result: Any, golden: str
) -> None:
    response = Response(1, json.loads(golden)["result"])
    assert encode(Response(1, result)) == golden.encode() + b"\n"
    decoded = decode(golden)
    assert decoded == response
    assert isinstance(decoded, Response)
    assert parse_result(METHODS[method], decoded) == result


@pytest.mark.parametrize(("message", "golden"), GOLDEN_OTHERS, ids=lambda v: type(v).__name__)
def test_errors_and_events_round_trip(message: Message, golden: str) -> None:
    assert encode(message) == golden.encode() + b"\n"
    assert decode(golden) == message


def test_the_goldens_cover_every_method_and_event() -> None:
    assert {r.method for r, _ in GOLDEN_REQUESTS} == set(METHODS)
    assert {m for m, _, _ in GOLDEN_RESULTS} == set(METHODS)
    assert {m.event for m, _ in GOLDEN_OTHERS if isinstance(m, Event)} == set(EVENTS)


@pytest.mark.parametrize(
    ("line", "code", "fragment"),
    [
        (b"not json", ErrorCode.MALFORMED, "not JSON"),
        (b"\xff\xfe", ErrorCode.MALFORMED, "not UTF-8"),
        (b"[1, 2]", ErrorCode.MALFORMED, "not object"),
        (b'{"id": 1}', ErrorCode.MALFORMED, "none of method"),
        (b'{"id": "1", "method": "ping"}', ErrorCode.MALFORMED, "integer id"),
        (b'{"id": 1, "method": "jobs.nuke", "params": {}}', ErrorCode.UNKNOWN_METHOD, "jobs.nuke"),
        (
            b'{"id": 1, "method": "ping", "params": []}',
            ErrorCode.INVALID_PARAMS,
            "expected an object",
        ),
        (
            b'{"id": 1, "method": "hello", "params": {"protocol_version": "1", "client_version": "x"}}',
            ErrorCode.INVALID_PARAMS,
            "HelloParams.protocol_version: expected int, got string",
        ),
        (
            b'{"id": 1, "method": "hello", "params": {"protocol_version": 1}}',
            ErrorCode.INVALID_PARAMS,
            "client_version",
        ),
        (
            b'{"id": 1, "method": "ping", "params": {"surprise": true}}',
            ErrorCode.INVALID_PARAMS,
            "unknown field 'surprise'",
        ),
        (b'{"event": "fireworks", "data": {}}', ErrorCode.MALFORMED, "unknown event"),
        (b"x" * (MAX_LINE_BYTES + 1), ErrorCode.OVERSIZED, "exceeds"),
        (b"[" * 100_000, ErrorCode.MALFORMED, "nested too deeply"),
        (b'{"id": ' + b"1" * 5000 + b', "method": "ping"}', ErrorCode.MALFORMED, "usable JSON"),
    ],
)
def test_bad_lines_raise_a_clear_protocol_error(line: bytes, code: str, fragment: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(line)
    assert caught.value.code == code
    assert fragment in caught.value.message


def test_an_error_for_a_known_id_carries_that_id() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(b'{"id": 9, "method": "nope"}')
    assert caught.value.request_id == 9


@given(st.binary(max_size=300))
def test_any_bytes_decode_or_raise_protocol_error(line: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decode(line)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_any_json_in_a_request_decodes_or_raises_protocol_error(params: Any) -> None:
    for method in METHODS:
        with contextlib.suppress(ProtocolError):
            decode(json.dumps({"id": 1, "method": method, "params": params}))


def test_framer_splits_lines_across_chunks() -> None:
    framer = LineFramer(max_bytes=100)
    assert framer.feed(b'{"a"') == []
    assert framer.feed(b':1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert framer.pending_bytes == 4


def test_framer_drops_an_oversized_line_and_keeps_going() -> None:
    framer = LineFramer(max_bytes=10)
    out = framer.feed(b"short\n" + b"y" * 25)
    out += framer.feed(b"y" * 25 + b"\nnext\n")
    assert out == [b"short", OversizedLine(50), b"next"]
    assert framer.pending_bytes == 0


def test_bundle_digest_depends_on_paths_and_contents_not_order() -> None:
    files = [("agent/a.py", b"x"), ("agent/b.py", b"y")]
    assert bundle_digest(files) == bundle_digest(list(reversed(files)))
    assert bundle_digest(files) != bundle_digest([("agent/a.py", b"y"), ("agent/b.py", b"x")])
    assert bundle_digest([("agent/ab", b"")]) != bundle_digest([("agent/a", b"b")])


def test_mutating_requests_need_an_idempotency_key(monkeypatch: pytest.MonkeyPatch) -> None:
    poke = Method("jobs.poke", PingParams, PingResult, mutating=True)
    monkeypatch.setitem(METHODS, "jobs.poke", poke)
    with pytest.raises(ProtocolError) as caught:
        decode(b'{"id": 4, "method": "jobs.poke", "params": {}}')
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert "idempotency_key" in caught.value.message
    assert caught.value.request_id == 4
    keyed = Request(4, "jobs.poke", PingParams(), idempotency_key="launch-7f3a")
    assert decode(encode(keyed)) == keyed
    assert b'"idempotency_key":"launch-7f3a"' in encode(keyed)


def test_a_dataset_line_from_an_agent_without_window_rates_still_decodes() -> None:
    result: Any = SNAPSHOT  # a Response holds any result
    line = encode(Response(1, result)).decode()
    older = line.replace(',"tokens_per_s_by_window":[2.5,null]', "")
    assert older != line
    response = decode(older)
    assert isinstance(response, Response)
    [dataset] = parse_result(METHODS["snapshot"], response).datasets
    assert dataset.tokens_per_s_by_window == ()
    assert dataset.api_usage == DATASET.api_usage
