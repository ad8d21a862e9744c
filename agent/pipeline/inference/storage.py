"""When the runner's files cannot be written: a full disk, a quota, an I/O error, a size limit.

Any failed write of a dataset file stops the run: dispatch stops at once, answers still coming
are dropped (there is nowhere to keep them), every record already written stays, and a partial
line the failed write left is cut back to the last newline the runner wrote. The error carries
the path and the errno, so runner.json, the log line and the agent's alert can all say why.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""No room for more bytes: free space (or raise the limit) and rerun. Other errnos (EIO,
EROFS...) are write failures of another kind, reported the same way."""


class StorageError(Exception):
    """A file of the dataset could not be written; the run stops without losing a record."""

    def __init__(self, path: Path, error: OSError, detail: str = "") -> None:
        self.path = path
        self.errno = error.errno
        self.errno_name = errno.errorcode.get(error.errno or 0, "EUNKNOWN")
        self.strerror = error.strerror or str(error)
        self.detail = detail
        super().__init__(self.describe())

    def __str__(self) -> str:
        return self.describe()

    @property
    def disk_full(self) -> bool:
        """True when the cause is a lack of room rather than a broken device."""
        return self.errno in DISK_FULL_ERRNOS

    def describe(self) -> str:
        """`cannot write PATH: No space left on device (ENOSPC)` plus what was done about it."""
        detail = f"; {self.detail}" if self.detail else ""
        return f"cannot write {self.path}: {self.strerror} ({self.errno_name}){detail}"

    def as_record(self) -> dict[str, object]:
        """What runner.json says about it."""
        return {
            "path": str(self.path), "errno": self.errno_name, "message": self.strerror,
            "disk_full": self.disk_full, "detail": self.detail,
        }  # fmt: skip


def cut_back(fd: int, path: Path, good_end: int) -> str:
    """Cut what a failed append left past `good_end` (just after a newline); says what it did."""
    try:
        size = os.fstat(fd).st_size
        if size <= good_end:
            return "no partial line was left"
        os.ftruncate(fd, good_end)
    except OSError as exc:
        return (
            f"a partial line may remain past byte {good_end} ({exc.strerror}); the next run moves "
            f"it to {path.with_suffix('.torn').name}"
        )
    return f"cut a partial line of {size - good_end} bytes back to byte {good_end}"


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite an existing small file in its own blocks, for a full disk.

    An atomic replace needs a new file, which a full disk cannot hold. A reader may see this one
    half written; readers of runner.json take an unreadable file as a missing one.
    """
    fd = os.open(path, os.O_WRONLY)
    try:
        written = os.pwrite(fd, data, 0)
        while written < len(data):
            written += os.pwrite(fd, data[written:], written)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
