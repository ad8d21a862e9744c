"""The agent's task owner: close cancels every task within its limit, and failures are heard."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from agent.tasks import OwnerClosedError, TaskOwner


async def test_close_cancels_every_task_and_waits_for_it() -> None:
    owner = TaskOwner("test")
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    for name in ("a", "b"):
        _ = owner.spawn(forever(name), name)
    await asyncio.sleep(0)
    assert owner.active == 2
    await owner.close()
    assert sorted(ended) == ["a", "b"]
    assert owner.active == 0


async def test_a_task_that_will_not_stop_does_not_hold_up_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner = TaskOwner("test", close_timeout_s=0.2)
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    task = owner.spawn(stubborn(), "stubborn")
    await asyncio.sleep(0)
    started = time.monotonic()
    await owner.close()
    assert time.monotonic() - started < 2.0
    assert "test: stubborn did not stop within 0.2 s" in caplog.text
    release.set()
    await task


async def test_nothing_is_spawned_after_close() -> None:
    owner = TaskOwner("test")
    await owner.close()
    work = asyncio.sleep(0)
    with pytest.raises(OwnerClosedError):
        _ = owner.spawn(work, "late")


async def test_a_failure_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    owner = TaskOwner("test")

    async def broken() -> None:
        raise ValueError("boom")

    task = owner.spawn(broken(), "broken")
    with caplog.at_level(logging.ERROR), pytest.raises(ValueError, match="boom"):
        await task
    assert "task test: broken failed" in caplog.text
    assert "ValueError: boom" in caplog.text
    assert owner.active == 0
