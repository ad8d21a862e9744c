"""Facts about processes, read from /proc: start times, process groups, command lines.

A pid alone is never trusted: pids are recycled. A process is named by (pid, start time in clock
ticks since boot), and every signal is preceded by a check that the pid still has that start
time. This module only reads; it never signals (one process's entries: agent/protocol/procfs.py).
"""

from __future__ import annotations

import functools
import os

from agent.protocol.procfs import PROC as PROC
from agent.protocol.procfs import ProcessInfo as ProcessInfo
from agent.protocol.procfs import all_pids as all_pids
from agent.protocol.procfs import command_line as command_line
from agent.protocol.procfs import process_info as process_info


def start_ticks(pid: int) -> int | None:
    """The start time of `pid`, or None if it does not exist."""
    info = process_info(pid)
    return info.start_ticks if info else None


def is_same_process(pid: int, expected_start_ticks: int) -> bool:
    """True if `pid` is alive and is still the process that started at `expected_start_ticks`."""
    info = process_info(pid)
    return info is not None and info.alive and info.start_ticks == expected_start_ticks


def group_members(pgid: int) -> list[ProcessInfo]:
    """Live processes whose process group is `pgid`."""
    members = []
    for pid in all_pids():
        info = process_info(pid)
        if info is not None and info.pgid == pgid and info.alive:
            members.append(info)
    return members


def process_tree() -> dict[int, list[ProcessInfo]]:
    """Every live process by its parent's pid, from one pass over /proc."""
    children: dict[int, list[ProcessInfo]] = {}
    for p in all_pids():
        info = process_info(p)
        if info is not None and info.alive:
            children.setdefault(info.ppid, []).append(info)
    return children


def descendants(pid: int, tree: dict[int, list[ProcessInfo]] | None = None) -> list[ProcessInfo]:
    """Live processes below `pid` in the parent tree (`tree`: one already read, for many pids)."""
    children = process_tree() if tree is None else tree
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child.pid)
    return found


def carrying(name: str, value: str) -> list[ProcessInfo]:
    """Live processes whose environment, as they were started, holds `name=value` exactly.

    How a job's processes are found wherever they went: every process a job starts inherits the
    mark the shim put in its environment, even one that left the group and lost its parent. Only
    processes of the agent's own user (or every one, for root) can be read.
    """
    entry = f"{name}={value}".encode()
    found = []
    for pid in all_pids():
        try:
            environ = (PROC / str(pid) / "environ").read_bytes()
        except OSError:
            continue
        if entry in environ.split(b"\0") and (info := process_info(pid)) is not None and info.alive:
            found.append(info)
    return found


def resident_bytes(pid: int) -> int:
    """The memory `pid` holds in RAM (its resident set), 0 when it cannot be read."""
    try:
        pages = int((PROC / str(pid) / "statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


@functools.cache
def boot_id() -> str:
    """This boot's random id: a pid and start time recorded under another boot name nothing now.

    Start times count from boot, so after a reboot a new process can have a recorded job's pid
    and start ticks; the boot id tells them apart. Empty where the kernel does not give one.
    """
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def same_boot(recorded: object) -> bool:
    """True unless `recorded` names another boot.

    A record without a boot id is taken as ours, and so is every record where this boot's id
    cannot be read (some container runtimes give an empty file): the pid and its start ticks
    still tell a process apart. A boot id that reads empty once took every healthy job for lost,
    and the leftover sweep ended them.
    """
    current = boot_id()
    return not isinstance(recorded, str) or not recorded or not current or recorded == current


def boot_time_s() -> float:
    """When the machine booted, in epoch seconds."""
    for line in (PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def started_at(start_ticks: int) -> float:
    """A start time in ticks as epoch seconds."""
    return boot_time_s() + start_ticks / os.sysconf("SC_CLK_TCK")
