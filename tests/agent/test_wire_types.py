"""The decoder's type rules: fixed value sets, unions, and what it does with fields it does not know."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from agent.protocol import (
    JOBS_STOP,
    PROTOCOL_VERSION,
    ErrorCode,
    Event,
    JobEvent,
    ProtocolError,
    Response,
    Snapshot,
    StopResult,
    WireTypeError,
    decode,
    from_wire,
    parse_result,
)

JOB = {"id": "j1", "name": "inference", "kind": "inference", "state": "running", "argv": []}


def event_line(data: object) -> bytes:
    return json.dumps({"event": "job", "data": data}).encode()


def test_a_value_outside_a_fixed_set_is_refused_naming_the_field_and_the_choices() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(event_line({"job": JOB | {"state": "zombie"}, "message": "m"}))
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    message = caught.value.message
    assert "JobEvent.job.state" in message
    assert "'zombie'" in message
    assert "'starting', 'running', 'stopping', 'stopped'" in message


def test_a_value_inside_the_fixed_set_is_kept() -> None:
    event = decode(event_line({"job": JOB, "message": "m"}))
    assert isinstance(event, Event)
    assert isinstance(event.data, JobEvent)
    assert event.data.job.state == "running"


def test_a_result_with_an_unknown_outcome_is_refused() -> None:
    response = Response(3, {"job": JOB, "outcome": "vanished", "steps": []})
    with pytest.raises(ProtocolError, match=r"StopResult.outcome: expected one of 'stopped'"):
        parse_result(JOBS_STOP, response)


def test_a_fixed_set_refuses_a_value_of_another_type() -> None:
    with pytest.raises(WireTypeError, match=r"StopResult.job.state: expected one of"):
        from_wire(StopResult, {"job": JOB | {"state": 1}, "outcome": "stopped"})


@dataclass(frozen=True)
class Ambiguous:
    value: int | str | None = None


def test_a_union_of_two_real_types_is_refused_rather_than_guessed() -> None:
    with pytest.raises(TypeError, match=r"Ambiguous.value: a union of 2 types is ambiguous"):
        from_wire(Ambiguous, {"value": "7"})
    with pytest.raises(TypeError, match="ambiguous"):
        from_wire(Ambiguous, {"value": None})


def test_unknown_fields_are_refused_at_any_depth_not_ignored() -> None:
    with pytest.raises(ProtocolError, match=r"JobEvent.job: unknown field 'colour'"):
        decode(event_line({"job": JOB | {"colour": "red"}, "message": "m"}))
    with pytest.raises(ProtocolError, match=r"StopResult: unknown field 'extra'"):
        parse_result(JOBS_STOP, Response(3, {"job": JOB, "outcome": "stopped", "extra": 1}))


@dataclass(frozen=True)
class Figures:
    count: int
    share: float
    note: str | None
    window: tuple[float | None, ...]


def test_only_values_of_the_exact_type_are_taken_as_they_are() -> None:
    taken = from_wire(Figures, {"count": 3, "share": 1, "note": None, "window": [1, None, 2.5]})
    assert taken == Figures(3, 1.0, None, (1.0, None, 2.5))
    assert type(taken.share) is float
    assert [type(v) for v in taken.window] == [
        float,
        type(None),
        float,
    ]
    with pytest.raises(WireTypeError, match=r"Figures.count: expected int, got boolean"):
        from_wire(Figures, {"count": True, "share": 1.0, "note": None, "window": []})
    with pytest.raises(WireTypeError, match=r"Figures.share: expected float, got string"):
        from_wire(Figures, {"count": 1, "share": "1", "note": None, "window": []})
    with pytest.raises(WireTypeError, match=r"Figures.window\[\]: expected float, got boolean"):
        from_wire(Figures, {"count": 1, "share": 1.0, "note": None, "window": [1.0, False]})


def test_a_wrong_value_deep_in_a_snapshot_names_its_place() -> None:
    dataset = {"name": "B1", "prompts": 1, "responses": 1, "tokens": None, "budget": None}
    with pytest.raises(
        WireTypeError, match=r"Snapshot.datasets\[\].tokens: expected int, got null"
    ):
        from_wire(Snapshot, {"taken_at": 1.0, "host_name": "h", "datasets_root": None,
                             "datasets": [dataset]})  # fmt: skip


def test_a_stop_signal_that_is_no_signal_is_refused_at_hello_naming_the_choices() -> None:
    """ "SIGNOPE" was accepted, launched, and then jobs.stop answered `internal`."""
    pipeline = {"jobs": {"run": {"argv": ["x"], "stop_signal": "SIGNOPE"}}}
    line = json.dumps({"id": 3, "method": "hello", "params": {
        "protocol_version": PROTOCOL_VERSION, "client_version": "t", "pipeline": pipeline}})  # fmt: skip
    with pytest.raises(ProtocolError) as refused:
        decode(line)
    assert refused.value.code == ErrorCode.INVALID_PARAMS
    assert "stop_signal" in refused.value.message
    assert "SIGNOPE" in refused.value.message
    assert "SIGTERM" in refused.value.message
