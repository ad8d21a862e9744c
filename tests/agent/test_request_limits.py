"""Every request is bounded: a real daemon refuses each size, count and interval out of range
with `invalid_params` naming the field, and answers the next request as usual."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.protocol import JobSpec, LogReadParams, PipelineConfig, Request
from agent.serving.limits import LimitError, check_request
from tests.support.raw_wire import RawWire, hello, refusal_problem, request_line

OUT_OF_RANGE: list[tuple[str, dict[str, Any], str | None, str]] = [
    ("logs.read", {"name": "agent", "max_bytes": 0}, None, "params.max_bytes must be between 1 and 1,048,576, got 0"),
    ("logs.read", {"name": "agent", "max_bytes": -1}, None, "params.max_bytes must be between 1"),
    ("logs.read", {"name": "agent", "max_bytes": 2**21}, None, "got 2,097,152"),
    ("logs.read", {"name": "agent", "offset": 2**70}, None, "params.offset must be between"),
    ("logs.subscribe", {"name": "agent", "inode": -(2**64)}, None, "params.inode must be between"),
    ("snapshot.watch", {"interval_s": 0}, None, "params.interval_s must be between 0.1 and 3,600, got 0"),
    ("snapshot.watch", {"interval_s": 1e9}, None, "params.interval_s must be between 0.1"),
    ("audit.read", {"limit": 0}, None, "params.limit must be between 1 and 10,000"),
    ("audit.read", {"limit": 10**7}, None, "params.limit must be between 1 and 10,000"),
    ("datasets.detail", {"name": "x", "recent": -3}, None, "params.recent must be between 1 and 1,000"),
    ("files.hash", {"paths": ["/x"] * 10_001}, None, "params.paths has 10,001 items; at most 10,000"),
    ("files.install", {"target": "/r/a", "staged": "/r/b", "sha256": "0" * 64, "mode": 2**20}, "k1",
     "params.mode must be between 0 and 4,095"),
    ("jobs.stop", {"job_id": "x"}, "k" * 129, "idempotency_key has 129 characters; at most 128"),
    ("hello", {"protocol_version": 1, "client_version": "t",
               "pipeline": {"datasets": {"root": "/r", "stall_after_s": -1}}}, None,
     "params.pipeline.datasets.stall_after_s must be between 1 and"),
    ("hello", {"protocol_version": 1, "client_version": "t",
               "pipeline": {"datasets": {"root": "/r", "budgets": {"B1": -5}}}}, None,
     "params.pipeline.datasets.budgets.B1 must be between 0 and"),
    ("hello", {"protocol_version": 1, "client_version": "t",
               "pipeline": {"jobs": {"j": {"argv": ["x"], "grace_s": 1e12}}}}, None,
     "params.pipeline.jobs.j.grace_s must be between 0 and 604,800"),
    ("hello", {"protocol_version": 1, "client_version": "t",
               "pipeline": {"jobs": {"j": {"argv": []}}}}, None,
     "params.pipeline.jobs.j.argv is empty; it needs at least the program to run"),
    ("pipeline.apply", {"pipeline": {"jobs": {"j": {"argv": []}}}}, "k2",
     "params.pipeline.jobs.j.argv is empty"),
    ("jobs.launch", {"job": "j", "argv": []}, "k3", "params.argv is empty"),
]  # fmt: skip


async def test_every_out_of_range_request_is_refused_naming_its_field(raw_agent: RawWire) -> None:
    await raw_agent.send(hello())
    assert "result" in await raw_agent.answer()
    for number, (method, params, key, said) in enumerate(OUT_OF_RANGE, start=10):
        line = request_line(number, method, params, key)
        assert await refusal_problem(raw_agent, line, number, said) is None, method


async def test_a_read_of_the_largest_size_is_served(raw_agent: RawWire, state_dir: Path) -> None:
    await raw_agent.send(hello())
    await raw_agent.answer()
    (state_dir / "agent.log").write_bytes(b"x" * 100 + b"\n" + b"y" * 2**21 + b"\n")
    await raw_agent.send(request_line(5, "logs.read", {"name": "agent", "max_bytes": 2**20}))
    chunk = (await raw_agent.answer())["result"]
    assert (chunk["start_offset"], chunk["end_offset"]) == (0, 101)


def test_non_finite_numbers_are_refused() -> None:
    nan = Request(1, "snapshot.watch", _watch(float("nan")))
    with pytest.raises(LimitError, match="interval_s must be a finite number, got nan"):
        check_request(nan)
    spec = JobSpec(("x",), grace_s=float("inf"))
    with pytest.raises(LimitError, match="grace_s must be a finite number"):
        check_request(Request(1, "hello", _hello(PipelineConfig(jobs={"j": spec}))))
    check_request(Request(1, "logs.read", LogReadParams("agent", -(2**20), None, 1)))


def _watch(interval_s: float) -> Any:
    from agent.protocol import WatchParams

    return WatchParams(interval_s)


def _hello(pipeline: PipelineConfig) -> Any:
    from agent.protocol import HelloParams

    return HelloParams(1, "t", pipeline)
