"""Waiting for a condition with a deadline: the one polling loop tests and fault scenarios share.

Something another process or task does shows up a moment later, later still on a loaded
machine, so a fixed sleep before a check is a guess. These poll instead, and say whether the
condition came in time; what to do when it did not (fail, count a violation) is the caller's.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
POLL_S = 0.02


async def wait_until(
    check: Callable[[], object],
    timeout_s: float,
    poll_s: float = POLL_S,
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> bool:
    """Poll `check` (plain, or async when it has to ask someone) until it holds (True), or
    `timeout_s` passes (False); `pause` waits between polls (a Pilot's, to let a screen draw)."""
    deadline = time.monotonic() + timeout_s
    while not await _holds(check):
        if time.monotonic() > deadline:
            return False
        await pause(poll_s)
    return True


async def until(
    check: Callable[[], object], what: str = "the condition", timeout_s: float = 30.0
) -> None:
    """`wait_until` that fails the test, saying what never happened."""
    assert await wait_until(check, timeout_s), f"never: {what}"


async def read_until(
    read: Callable[[], Awaitable[T]], done: Callable[[T], bool], what: str, timeout_s: float,
    poll_s: float = POLL_S,
) -> T:  # fmt: skip
    """Read until `done` holds for what was read, and return it; fails with the last value."""
    last: list[T] = []

    async def check() -> bool:
        last[:] = [await read()]
        return done(last[0])

    assert await wait_until(check, timeout_s, poll_s), f"{what} never got there: {last[0]}"
    return last[0]


def wait_until_blocking(
    check: Callable[[], object], timeout_s: float, poll_s: float = 0.05
) -> bool:
    """`wait_until` for code with no event loop (a terminal driver, a thread)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True


async def _holds(check: Callable[[], object]) -> bool:
    outcome = check()
    return bool(await outcome if inspect.isawaitable(outcome) else outcome)
