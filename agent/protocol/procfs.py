"""One process as /proc shows it: the reader the agent and the demo's teardown share.

Here because the console may import only the protocol. It reads when called and never signals;
the agent's queries over many processes are in agent/host/procfs.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    pgid: int
    state: str
    start_ticks: int
    """Start time in clock ticks since boot: with the pid, a name no other process gets."""

    @property
    def alive(self) -> bool:
        """Running or sleeping, not a zombie waiting to be reaped."""
        return self.state not in ("Z", "X")


def process_info(pid: int) -> ProcessInfo | None:
    """What /proc says of `pid`, or None if it does not exist."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ")".
    fields = stat.rsplit(")", 1)[1].split()
    return ProcessInfo(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))


def all_pids() -> list[int]:
    """Every pid visible in /proc."""
    return [int(name) for name in os.listdir(PROC) if name.isdigit()]


def command_line(pid: int) -> list[str]:
    """The argv of `pid` (empty for kernel threads or when unreadable)."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
