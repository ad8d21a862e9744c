"""One writer per dataset: an exclusive flock on `writer.lock` in the dataset folder.

The runner takes it before it touches any file of the dataset and holds it for its whole life;
the kernel lets go of it when the process dies, however it dies, so a lock is never stale. A
second runner finds it taken and learns who holds it from /proc/locks (the kernel's word), or
else from the holder's own note inside the file. The agent only reads /proc/locks: it never
takes the lock itself, so looking can never make a starting runner fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from agent.host.procfs import PROC, command_line, is_same_process, start_ticks

LOCK_NAME = "writer.lock"


@dataclass(frozen=True, slots=True)
class LockHolder:
    """The process holding a dataset's writer lock."""

    pid: int
    argv: tuple[str, ...]

    def describe(self) -> str:
        """`pid N (command line)`, for messages."""
        command = " ".join(self.argv) if self.argv else "command line unreadable"
        return f"pid {self.pid} ({command})"


class WriterLockError(Exception):
    """The lock file cannot be opened (no dataset folder, no permission...)."""


class DatasetLockedError(WriterLockError):
    """Another process holds the dataset's writer lock."""

    def __init__(self, folder: Path, holder: LockHolder | None) -> None:
        who = holder.describe() if holder else "a process that cannot be named"
        super().__init__(
            f"{folder} already has a writer: {who} holds {folder / LOCK_NAME}; two writers would "
            "duplicate ids and spend the budget twice. Stop it first, or wait for it to end"
        )
        self.holder = holder


def take_writer_lock(folder: Path) -> int:
    """Lock `folder` for this process until it exits; returns the descriptor to keep open."""
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise WriterLockError(
            f"cannot open the dataset's writer lock {path}: {exc.strerror}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DatasetLockedError(folder, lock_holder(path) or noted_holder(path)) from None
    _leave_a_note(fd)
    return fd


def _leave_a_note(fd: int) -> None:
    """Who holds it, for people and for systems without /proc/locks (best effort: tiny, in place)."""
    pid = os.getpid()
    note = {"pid": pid, "start_ticks": start_ticks(pid), "argv": command_line(pid)}
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(note) + "\n").encode(), 0)


def lock_holder(path: Path, locks: FlockTable | None = None) -> LockHolder | None:
    """Who holds the writer lock at `path` now, or None if nobody does.

    `locks` is one reading of /proc/locks, to share between many paths.
    """
    try:
        info = path.stat()
    except OSError:
        return None
    table = flock_writers() if locks is None else locks
    exact = table.get((os.major(info.st_dev), os.minor(info.st_dev), info.st_ino), [])
    same_inode = [
        pid for (_, _, inode), pids in table.items() if inode == info.st_ino for pid in pids
    ]
    # A device that differs (btrfs subvolumes) or another file with the same inode number on
    # another filesystem: only a process that has this very file open counts.
    pid = exact[0] if exact else next((p for p in same_inode if _has_open(p, path)), None)
    if pid is None and not PROC.joinpath("locks").exists():
        pid = _noted_pid(path)
    return LockHolder(pid, tuple(command_line(pid))) if pid is not None else None


def noted_holder(path: Path) -> LockHolder | None:
    """The holder the lock file's note names, if that very process still lives (not a reused pid)."""
    pid = _noted_pid(path)
    return LockHolder(pid, tuple(command_line(pid))) if pid is not None else None


FlockTable = dict[tuple[int, int, int], list[int]]
"""(device major, minor, inode) -> pids holding an exclusive flock on that file."""


def flock_writers() -> FlockTable:
    """Every exclusive flock now held, from /proc/locks (empty if unreadable)."""
    try:
        text = (PROC / "locks").read_text()
    except OSError:
        return {}
    holders: FlockTable = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or fields[3] != "WRITE":
            continue  # waiters ("->") and POSIX or shared locks are not holders of ours
        with contextlib.suppress(ValueError):
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            holders.setdefault(key, []).append(int(fields[4]))
    return holders


def _has_open(pid: int, path: Path) -> bool:
    """True if `pid` has `path` open: confirms an inode match across filesystems."""
    fd_dir = PROC / str(pid) / "fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    target = os.path.realpath(path)
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(fd_dir / name) == target:
                return True
    return False


def _noted_pid(path: Path) -> int | None:
    try:
        note = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(note, dict):
        return None
    pid, ticks = note.get("pid"), note.get("start_ticks")
    if isinstance(pid, int) and isinstance(ticks, int) and is_same_process(pid, ticks):
        return pid
    return None
