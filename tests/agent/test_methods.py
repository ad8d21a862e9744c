"""Typed methods: each constant pairs a wire name with its params and result types."""

from __future__ import annotations

from typing import assert_type

from agent.protocol import JOBS_STOP, METHODS, Method, Response, StopResult, methods, parse_result

JOB = {"id": "j1", "name": "inference", "kind": "inference", "state": "stopped", "argv": []}


def test_methods_is_built_from_every_constant_and_only_from_them() -> None:
    constants = [v for v in vars(methods).values() if isinstance(v, Method)]
    assert sorted(m.name for m in constants) == sorted(METHODS)
    assert all(METHODS[m.name] is m for m in constants)


def test_a_result_is_parsed_as_the_type_its_method_declares() -> None:
    response = Response(1, {"job": JOB, "outcome": "stopped", "steps": []})
    result = parse_result(JOBS_STOP, response)
    assert_type(result, StopResult)  # mypy checks this line: no cast by method name
    assert isinstance(result, StopResult)
    assert result.outcome == "stopped"


def test_only_the_changing_methods_need_an_idempotency_key() -> None:
    mutating = sorted(name for name, method in METHODS.items() if method.mutating)
    assert mutating == [
        "autopilot.control", "autostart.set", "files.install", "files.rollback", "jobs.launch",
        "jobs.stop", "operations.generate", "operations.redeploy", "operations.sequence",
        "operations.sweep",
        "pipeline.apply",
    ]  # fmt: skip
