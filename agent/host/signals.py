"""Signals sent only where they were meant: never to pid 0, 1 or below, nor to the agent itself.

`os.kill(0, s)` and `os.killpg(0, s)` signal the caller's own process group, and a pid of -1 every
process the caller may signal: a pid read from a half-written record as 0 took the daemon's own
group down, and a test's `killpg(job.pgid or 0)` once ended a whole CI run. Every signal
the project sends goes through here (ruff's TID251 bans os.kill and os.killpg elsewhere).
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


def is_running(pid: int) -> bool:
    """Whether a process `pid` exists (a zombie counts): signal 0, never to a pid of 0 or below."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def _check(number: int, what: str) -> None:
    if isinstance(number, bool) or not isinstance(number, int) or number <= 1:
        raise UnsafeSignalError(f"refusing to signal {what} {number!r}: no job has it")
    if number == os.getpid():
        raise UnsafeSignalError(f"refusing to signal {what} {number}: the agent itself")
