"""Which processes have a file open for writing, from /proc: the kernel's word, not a lock's.

A writer lock only stops writers that take it. An old script appending to a dataset with no
lock is still visible here, as an open descriptor on the same file with a write access mode.
A process this user may not inspect is not seen: the caller pairs this with a check that the
file stays still.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agent.host.procfs import PROC, all_pids

_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


def processes_writing(path: Path) -> list[int]:
    """Pids (other than ours) holding `path` open for writing, by device and inode."""
    try:
        info = os.stat(path)
    except OSError:
        return []
    target = (info.st_dev, info.st_ino)
    ours = os.getpid()
    return [pid for pid in all_pids() if pid != ours and _writes(pid, target)]


def _writes(pid: int, target: tuple[int, int]) -> bool:
    """True if any descriptor of `pid` is `target` opened with a write access mode."""
    fd_dir = PROC / str(pid) / "fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            info = os.stat(fd_dir / name)
            if (info.st_dev, info.st_ino) == target and _opened_for_write(pid, name):
                return True
    return False


def _opened_for_write(pid: int, fd: str) -> bool:
    """The descriptor's access mode, from the octal `flags:` line of its fdinfo."""
    text = (PROC / str(pid) / "fdinfo" / fd).read_text()
    flags = next(line.split()[1] for line in text.splitlines() if line.startswith("flags:"))
    return (int(flags, 8) & os.O_ACCMODE) in _WRITE_MODES
