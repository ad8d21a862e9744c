"""Whether a process still runs, and waiting for one to end: kill() returns when the signal is
sent, not when the process is gone, so a test that reads "ended" at once can read it alive."""

from __future__ import annotations

from agent.host.procfs import process_info
from tests.support.waits import wait_until


def alive(pid: int | None) -> bool:
    """True while `pid` exists and has not exited (a zombie awaiting its reaper has exited)."""
    info = process_info(pid) if pid is not None else None
    return info is not None and info.alive


async def gone_within(pid: int, seconds: float) -> bool:
    """True once `pid` has ended, False if it still runs after `seconds`."""
    return await wait_until(lambda: not alive(pid), seconds)
