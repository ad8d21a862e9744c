"""Waiting in a Pilot test for what a screen shows: a screen draws a frame or two after what it
shows has arrived, later on a loaded machine, so a fixed pause before an assertion is a guess."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot


def holds(condition: bool, shown: object = "") -> None:
    """Assert `condition` (for a lambda given to `eventually`), showing `shown` when it fails."""
    assert condition, shown


async def eventually(pilot: Pilot[Any], check: Callable[[], None], timeout_s: float = 20) -> None:
    """Until `check` passes (its assertions, as they are), or its last failure after `timeout_s`:
    a screen draws a frame or two after what it shows has arrived, later on a loaded machine."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await pilot.pause(0.05)
        else:
            return
