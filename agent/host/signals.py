"""Signals sent only where they were meant: never to pid 0, 1 or below, nor to the agent itself.

`os.kill(0, s)` and `os.killpg(0, s)` signal the caller's own process group, and a pid of -1 every
process the caller may signal: a pid read from a half-written record as 0 took the daemon's own
group down (#28). Every kill in agent/jobs goes through here.
"""

from __future__ import annotations

import os
import signal


class UnsafeSignalError(ValueError):
    """A pid or group that no job can have: 0, 1, negative, or the agent's own."""


def kill_process(pid: int, signum: signal.Signals) -> None:
    """os.kill, refused for a pid that is not some other process's."""
    _check(pid, "process")
    os.kill(pid, signum)


def kill_group(pgid: int, signum: signal.Signals) -> None:
    """os.killpg, refused for a group that is not some other process's group."""
    _check(pgid, "process group")
    if pgid == os.getpgid(0):
        raise UnsafeSignalError(f"refusing to signal process group {pgid}: the agent's own")
    os.killpg(pgid, signum)


def _check(number: int, what: str) -> None:
    if isinstance(number, bool) or not isinstance(number, int) or number <= 1:
        raise UnsafeSignalError(f"refusing to signal {what} {number!r}: no job has it")
    if number == os.getpid():
        raise UnsafeSignalError(f"refusing to signal {what} {number}: the agent itself")
