"""Whether a process still runs, and waiting for one to end: kill() returns when the signal is
sent, not when the process is gone, so a test that reads "ended" at once can read it alive."""

from __future__ import annotations

import asyncio
import time

from agent.host.procfs import process_info


def alive(pid: int) -> bool:
    """True while `pid` exists and has not exited (a zombie awaiting its reaper has exited)."""
    info = process_info(pid)
    return info is not None and info.alive


async def gone_within(pid: int, seconds: float) -> bool:
    """True once `pid` has ended, False if it still runs after `seconds`."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
