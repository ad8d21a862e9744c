"""Opening files that anyone can put where the agent or a job reads: regular files only.

A FIFO, a device or a socket named `raw_responses.jsonl` would block a reader forever (a FIFO
with no writer) or feed it without end (/dev/zero): such paths are refused before they are read,
without blocking, with an error that says what they are.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularFileError(OSError):
    """The path is a FIFO, a device, a socket or a folder: it is not read."""


def file_kind(mode: int) -> str:
    """What a st_mode describes, in words ("a FIFO (named pipe)", "a regular file"...)."""
    return next((words for test, words in _KINDS if test(mode)), "a regular file")


def check_regular(path: Path, mode: int) -> None:
    """Raise NotRegularFileError unless `mode` is a regular file's."""
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(
            f"{path} is {file_kind(mode)}, not a regular file; it is not read"
        )


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, if it is a regular file; never blocks on a FIFO or a device.

    The path is checked before opening (opening some devices has effects) and the open file
    again after (the path may have been swapped in between).
    """
    check_regular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    return os.fdopen(_regular_descriptor(path, fd), "rb")


def open_regular_for_append(path: Path, mode: int = 0o644) -> int:
    """A file descriptor appending to `path` (created if missing), if it is a regular file.

    O_NONBLOCK makes opening a FIFO without a reader fail at once instead of hanging.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO that nobody reads
            raise NotRegularFileError(
                f"{path} is a FIFO (named pipe), not a regular file"
            ) from None
        raise
    return _regular_descriptor(path, fd)


def _regular_descriptor(path: Path, fd: int) -> int:
    """`fd`, made blocking, if what it opened is a regular file; closed and refused otherwise."""
    try:
        check_regular(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
