"""Request limits: out-of-range requests, idempotency keys across a restart, a huge audit log.

(a) Requests with every bounded field out of range, drawn by a seeded Random (sizes of 0, -1
or above 1 MiB, intervals of 0, NaN and Infinity written as JSON literals, counts in the
millions, integers past 64 bits, keys of 129 to 100,000 characters), each followed by a ping on
the same connection: each must be refused with `invalid_params` naming its field, and the ping
answered. (b) Installs with idempotency keys, the daemon stopped and started again: the same key
and request must get the first answer (running it again would fail: its upload is gone), the
same key with another request `key_reused`. (c) `audit.read` on a 64 MB audit log: answered at
once, without the daemon's memory growing by the log's size.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

from agent.attach import stop_daemon
from agent.protocol import FILES_INSTALL, InstallParams, InstallResult, PipelineConfig
from agent.state import StatePaths
from console.link.agent_link import AgentRequestError, LinkError
from faults.harness.agents import agent_cleanup, daemon_pid, greeted_wire, log_tracebacks
from faults.harness.memory import resident_mb
from faults.result import Scale, ScenarioResult
from tests.support.operations import local_link
from tests.support.process_checks import alive
from tests.support.raw_wire import refusal_problem, request_line

TITLE = "Request limits: sizes, counts, intervals, keys; keys across a restart; a huge audit log"
AUDIT_BYTES = 64 * 1024 * 1024
AUDIT_ANSWER_S = 5.0


def out_of_range(rng: random.Random, number: int) -> tuple[bytes, str]:
    """One request line with a field out of its range, and the field its refusal must name."""
    cases: list[tuple[str, dict[str, Any], str, list[Any]]] = [
        ("logs.read", {"name": "agent"}, "max_bytes", [0, -1, -(2**40), 2**20 + 1, 10**12]),
        ("logs.read", {"name": "agent"}, "offset", [2**64, -(2**70)]),
        ("logs.subscribe", {"name": "agent"}, "inode", [2**63, -(2**64)]),
        ("snapshot.watch", {}, "interval_s", [0, -5, 0.05, 3601, "NaN", "Infinity", "-Infinity"]),
        ("audit.read", {}, "limit", [0, -1, 10_001, 10**9]),
        ("datasets.detail", {"name": "x"}, "recent", [0, -10, 1001, 2**70]),
    ]
    method, params, field, values = cases[rng.randrange(len(cases))]
    value = values[rng.randrange(len(values))]
    text = json.dumps({"id": number, "method": method, "params": {**params, field: "@"}})
    return text.replace('"@"', str(value)).encode() + b"\n", field


def long_key(rng: random.Random, number: int) -> tuple[bytes, str]:
    """A mutating request whose idempotency key is over 128 characters."""
    key = "k" * rng.choice([129, 1000, 100_000])
    return request_line(number, "jobs.stop", {"job_id": "x"}, key), "idempotency_key"


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three parts, each adding its counts and a note."""
    result = ScenarioResult("request_limits", TITLE, seed)
    rng = random.Random(seed)
    state_dir = workdir / "state"
    async with agent_cleanup(state_dir):
        await _bounds(state_dir, rng, scale.pick(400, 60), result)
        await _keys_across_restart(workdir, state_dir, scale.pick(20, 4), result)
        await _audit(state_dir, result)
        for line in dict.fromkeys(log_tracebacks(state_dir)):
            result.violate(f"a traceback in agent.log: {line}")
    return result


async def _bounds(state_dir: Path, rng: random.Random, count: int, result: ScenarioResult) -> None:
    wire = await greeted_wire(state_dir, result)
    if wire is None:
        return
    refused = 0
    try:
        for number in range(100, 100 + count):
            line, field = long_key(rng, number) if number % 7 == 0 else out_of_range(rng, number)
            result.faults += 1
            result.attempted += 1
            problem = await refusal_problem(wire, line, number, field)
            if problem is not None:
                result.violate(f"{line[:120]!r}: {problem}"[:400])
            refused += problem is None
    finally:
        await wire.close()
    result.acknowledged += refused
    result.notes.append(
        f"bounds: {refused} of {count} out-of-range requests refused naming their field"
    )


async def _keys_across_restart(
    workdir: Path, state_dir: Path, count: int, result: ScenarioResult
) -> None:
    root = workdir / "deploy"
    root.mkdir()
    pipeline = PipelineConfig(deploy_roots=(str(root),))
    installs = [_install(root, n) for n in range(count)]
    async with local_link(state_dir, pipeline) as link:
        first = [
            await link.call(FILES_INSTALL, p, idempotency_key=f"key-{n}")
            for n, p in enumerate(installs)
        ]
    started = time.monotonic()
    await asyncio.to_thread(stop_daemon, StatePaths(state_dir))
    async with local_link(state_dir, pipeline) as link:
        result.faults += 1
        result.recovery_s.append(time.monotonic() - started)
        for number, params in enumerate(installs):
            await _replay(link, number, params, first[number], result)
    result.notes.append(
        f"keys: {count} installs, the daemon restarted, each repeated (same answer) and each key "
        "reused for another request (key_reused)"
    )


def _install(root: Path, number: int) -> InstallParams:
    content = b"version %d\n" % number
    staged = root / f".f{number}.py.eagle-upload-x"
    staged.write_bytes(content)
    return InstallParams(
        str(root / f"f{number}.py"), str(staged), hashlib.sha256(content).hexdigest(), 0o644
    )


async def _replay(
    link: Any, number: int, params: InstallParams, first: InstallResult, result: ScenarioResult
) -> None:
    result.attempted += 2
    try:
        again = await link.call(FILES_INSTALL, params, idempotency_key=f"key-{number}")
    except LinkError as exc:
        result.duplicated += 1
        result.violate(f"install {number} after the restart ran again: {exc}")
        again = None
    if again is not None:
        result.acknowledged += again == first
        if again != first:
            result.violate(f"install {number}: {again} after the restart, {first} before")
    other = InstallParams(params.target, params.staged, params.sha256, 0o600)
    try:
        await link.call(FILES_INSTALL, other, idempotency_key=f"key-{number}")
        result.violate(f"key-{number} reused for another request was accepted")
    except AgentRequestError as exc:
        result.acknowledged += exc.code == "key_reused"
        if exc.code != "key_reused":
            result.violate(f"key-{number} reused: {exc.code} ({exc.detail}), want key_reused")


async def _audit(state_dir: Path, result: ScenarioResult) -> None:
    entry = json.dumps({"ts": 1.0, "client": "c", "method": "jobs.stop", "params": {"job_id": "j" * 200},
                        "idempotency_key": "k", "outcome": "ok"}).encode() + b"\n"  # fmt: skip
    with (state_dir / "audit.jsonl").open("ab") as handle:
        handle.write(entry * (AUDIT_BYTES // len(entry)))
    wire = await greeted_wire(state_dir, result)
    if wire is None:
        return
    pid = daemon_pid(state_dir)
    before = resident_mb(pid)
    try:
        result.faults += 1
        result.attempted += 1
        began = time.monotonic()
        await wire.send(
            json.dumps({"id": 7, "method": "audit.read", "params": {"limit": 10}}).encode() + b"\n"
        )
        _, answer = await wire.answers_until(7)
        took = time.monotonic() - began
    finally:
        await wire.close()
    grew = resident_mb(pid) - before
    entries = (answer or {}).get("result", {}).get("entries", [])
    if len(entries) != 10 or took > AUDIT_ANSWER_S or grew > 32 or not alive(pid):
        result.violate(
            f"audit.read on a {AUDIT_BYTES >> 20} MB log: {len(entries)} entries in {took:.2f} s, memory +{grew:.0f} MB"
        )
    else:
        result.acknowledged += 1
    result.notes.append(
        f"audit: the last 10 of a {AUDIT_BYTES >> 20} MB audit log in {took * 1000:.0f} ms, "
        f"daemon memory +{grew:.0f} MB"
    )
