"""The simulated scheduler in-process: its clock follows the wall clock times --speed.

A tick that runs late (a busy event loop, a loaded machine) must still advance the model by the
wall time that really passed; the old engine advanced a fixed TICK_S per tick and so ran at
93-96 % of the requested speed, less under load.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from agent.simulator.engine import TICK_S, Engine, EngineSettings, SimRequest
from agent.simulator.tokens import PlannedAnswer

SPEED = 10.0
PER_REQUEST = 80.0


def long_request(rid: str) -> SimRequest:
    ids = list(range(1_000_000))
    return SimRequest(rid, 1, PlannedAnswer(ids, "length"), len(ids))


async def hog_the_loop(block_s: float) -> None:
    """Hold the event loop for `block_s` at a time, as a busy server's other work does."""
    while True:
        time.sleep(block_s)  # noqa: ASYNC251  (blocking on purpose: that is the load)
        await asyncio.sleep(0)


@pytest.mark.parametrize("load_block_s", [0.0, TICK_S / 2])
async def test_simulated_time_is_wall_time_times_speed(load_block_s: float) -> None:
    settings = EngineSettings(
        decode_tokens_per_s=1e9, max_tokens_per_s_per_request=PER_REQUEST, speed=SPEED
    )
    engine = Engine(settings, lambda line: None)
    request = long_request("r1")
    engine.submit(request)
    started = time.monotonic()
    tasks = [asyncio.create_task(engine.run())]
    if load_block_s:
        tasks.append(asyncio.create_task(hog_the_loop(load_block_s)))
    await asyncio.sleep(2.0)
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    wall_s = time.monotonic() - started

    # seen from outside: within one late tick of the speed asked for (the old engine, 66 % under
    # this load and 93-96 % without, fails here)
    assert request.produced == pytest.approx(PER_REQUEST * SPEED * wall_s, rel=0.05)
    assert engine.busy_wall_s == pytest.approx(wall_s, abs=0.2)  # the engine saw the same clock
    assert engine.sim_seconds == pytest.approx(engine.busy_wall_s * SPEED, rel=0.01)
    assert request.produced == pytest.approx(PER_REQUEST * engine.sim_seconds, rel=0.01)


async def test_an_idle_engine_does_not_count_idle_time() -> None:
    engine = Engine(EngineSettings(speed=SPEED), lambda line: None)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(0.3)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert engine.sim_seconds == 0.0
