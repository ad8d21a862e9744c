"""Opening the agent's own files in its state folder: never through a link, only our regular files.

The agent may run as root on a shared box. A link planted where `agent.log` or `audit.jsonl`
belongs would have it append to whatever the link names; a hard link to another file, the same.
Every file of the state folder is opened here, without following links, and checked once open:
a regular file, ours, with no other name. What fails is refused with an error that says what
was found and what to do; nothing is written through it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from agent.host.regular_files import file_kind


class UnsafeStateFileError(OSError):
    """A file of the state folder is a link, another's, or not a regular file: it is not opened."""


def open_private(path: Path, flags: int, mode: int = 0o600) -> int:
    """A descriptor for `path` opened with `flags`, never through a symbolic link.

    Opening does not block on a FIFO; what is opened must be a regular file of ours with one
    name. Raises UnsafeStateFileError (an OSError naming `path`) otherwise.
    """
    safe = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
    try:
        fd = os.open(path, flags | safe, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise unsafe(path, _linked_or_fifo(path)) from None
        raise
    try:
        _check_opened(path, os.fstat(fd))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _linked_or_fifo(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "is not a regular file"
    return "is a symbolic link" if stat.S_ISLNK(mode) else f"is {file_kind(mode)}"


def _check_opened(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise unsafe(path, f"is {file_kind(info.st_mode)}")
    if info.st_uid != os.geteuid():
        raise unsafe(path, f"belongs to uid {info.st_uid}, not to the agent's uid {os.geteuid()}")
    if info.st_nlink > 1:
        raise unsafe(path, f"has {info.st_nlink - 1} other hard link(s)")


def unsafe(path: Path, what: str) -> UnsafeStateFileError:
    """The error for a state file that is refused: what it is, and what to do."""
    return UnsafeStateFileError(
        errno.EPERM,
        f"{path.name} in the agent's state folder {what}; the agent writes nothing through it. "
        f"Remove it (and find out who put it there): the agent makes a fresh one",
        str(path),
    )


def planted_entries(root: Path, files: tuple[str, ...], folders: tuple[str, ...]) -> list[str]:
    """Which of the state folder's own files and folders are there as a link or as another kind."""
    found = []
    for name in files + folders:
        try:
            mode = os.lstat(root / name).st_mode
        except FileNotFoundError:
            continue
        expected = stat.S_ISDIR(mode) if name in folders else stat.S_ISREG(mode)
        if stat.S_ISLNK(mode):
            found.append(f"{name} is a symbolic link")
        elif not expected:
            found.append(f"{name} is {file_kind(mode)}")
    return found
