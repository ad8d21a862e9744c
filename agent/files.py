"""Installing uploaded files atomically under the deploy roots, and rolling them back.

The console uploads a file over SFTP to an exclusive temp name beside its target; `install`
checks its sha256, keeps a hard-link backup of the old version, renames the temp over the target
(atomic on one filesystem) and fsyncs the directory. A crash at any point leaves the target
exactly old or exactly new. Every path must lie under a configured deploy root: `..`, absolute
paths elsewhere and symlinks that lead outside are refused before anything is touched.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from agent.host.regular_files import NotRegularFileError, file_kind, open_regular

STAGE_MARK = ".eagle-upload-"
BACKUP_SUFFIX = ".eagle-backup"
STALE_UPLOAD_S = 60.0
"""An upload temp older than this belongs to a deploy that was cut off, not to one in progress."""


class FileError(Exception):
    """A path or an install that is refused; the message says why."""


class UnsafeBackupError(FileError):
    """The backup is a link or not a regular file: someone else put it there."""


class NothingToRollBackError(FileError):
    """The file already has its previous version's bytes."""


@dataclass(frozen=True, slots=True)
class Roots:
    """The folders deploys may write under, resolved once."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, roots: tuple[str, ...]) -> Roots:
        """Roots from config strings."""
        return cls(tuple(Path(root).resolve() for root in roots))

    def confine(self, path: str) -> Path:
        """`path` as an absolute path under a root, or FileError naming the roots."""
        if not self.roots:
            raise FileError("no deploy roots are configured for this host; add deploy_roots")
        if "\0" in path:
            raise FileError(f"{path!r}: a path cannot hold a NUL byte")
        raw = Path(path)
        if not raw.is_absolute() or ".." in raw.parts:
            raise FileError(f"{path}: give an absolute path without '..'")
        resolved = raw.parent.resolve() / raw.name
        if raw.is_symlink():
            resolved = raw.resolve()
        if not any(resolved == root or root in resolved.parents for root in self.roots):
            shown = ", ".join(str(root) for root in self.roots)
            raise FileError(f"{path} resolves to {resolved}, outside the deploy roots ({shown})")
        return resolved


def sha256_of(path: Path) -> str | None:
    """The file's sha256, or None if it does not exist; a FIFO or a device is a FileError."""
    digest = hashlib.sha256()
    try:
        with open_regular(path) as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except FileNotFoundError:
        return None
    except NotRegularFileError as exc:
        raise FileError(str(exc)) from None
    return digest.hexdigest()


def backup_path(target: Path) -> Path:
    """Where the previous version of `target` is kept."""
    return target.with_name(target.name + BACKUP_SUFFIX)


def check_staged(target: Path, staged: Path) -> None:
    """The staged upload must be a temp file beside its target, named as the console names it."""
    if staged.parent != target.parent or not staged.name.startswith(f".{target.name}{STAGE_MARK}"):
        raise FileError(
            f"{staged}: an upload for {target} must be .{target.name}{STAGE_MARK}* beside it"
        )
    if staged.is_symlink() or not staged.is_file():
        raise FileError(f"{staged}: not a regular uploaded file")


def install(
    target: Path, staged: Path, expected_sha256: str, mode: int | None
) -> tuple[str | None, str | None]:
    """Swap `staged` in for `target`; returns (previous sha256, backup path)."""
    check_staged(target, staged)
    actual = sha256_of(staged)
    if actual != expected_sha256:
        staged.unlink(missing_ok=True)
        raise FileError(
            f"{target}: upload has sha256 {actual}, expected {expected_sha256}; nothing changed"
        )
    previous = sha256_of(target)
    backup = _keep_backup(target) if previous is not None else None
    _fsync_file(staged, mode)
    os.replace(staged, target)
    _fsync_dir(target.parent)
    return previous, str(backup) if backup else None


def rollback(target: Path) -> str:
    """Put the previous version back (atomically); returns its sha256.

    The backup is hard-linked to a temp name first (link() does not follow a symlink) and only
    that temp, checked to be a regular file, is renamed over the target: a planted
    `.eagle-backup` symlink can neither make the target a link out of the deploy roots nor be
    read through, even if it is swapped in after a check.
    """
    backup = backup_path(target)
    temp = target.with_name(f".{target.name}{STAGE_MARK}rollback-{os.getpid()}")
    temp.unlink(missing_ok=True)
    try:
        os.link(backup, temp, follow_symlinks=False)
    except FileNotFoundError:
        raise FileError(f"{target}: no previous version to roll back to") from None
    try:
        _refuse_unless_regular(temp, backup)
        refuse_identical_rollback(target, temp)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    os.replace(temp, target)
    _fsync_dir(target.parent)
    return sha256_of(target) or ""


def _refuse_unless_regular(linked: Path, backup: Path) -> None:
    """UnsafeBackupError unless `linked` (a hard link of `backup`) is a regular file itself."""
    mode = os.lstat(linked).st_mode
    if not stat.S_ISREG(mode):
        raise UnsafeBackupError(
            f"{backup} is {_kind(mode)}, not a file this agent kept: it is not rolled back to; "
            "remove it and install the version wanted instead"
        )


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else file_kind(mode)


def refuse_identical_rollback(target: Path, backup: Path) -> None:
    """A rollback to the bytes the file already has would change nothing: say so instead."""
    current = sha256_of(target)
    if current is not None and current == sha256_of(backup):
        raise NothingToRollBackError(
            f"{target}: nothing to roll back: it already is the previous version "
            f"(sha256 {current[:12]})"
        )


def remove_stale_uploads(
    folder: Path,
    now: float | None = None,
    keep: set[str] = frozenset(),  # type: ignore[assignment]
) -> list[Path]:
    """Delete upload temp files an interrupted deploy left (older than STALE_UPLOAD_S).

    Uploads in `keep` (those a redeploy under way will still swap in) stay, whatever their age.
    """
    now = time.time() if now is None else now
    removed = []
    for leftover in folder.glob(f".*{STAGE_MARK}*"):
        if str(leftover) in keep:
            continue
        if leftover.is_file() and now - leftover.stat().st_mtime > STALE_UPLOAD_S:
            leftover.unlink(missing_ok=True)
            removed.append(leftover)
    return removed


def _keep_backup(target: Path) -> Path:
    backup = backup_path(target)
    temp = target.with_name(f".{target.name}{STAGE_MARK}backup-{os.getpid()}")
    temp.unlink(missing_ok=True)
    os.link(target, temp)  # a hard link: the old bytes, kept without copying them
    os.replace(temp, backup)
    # rename() does nothing when both names are links to one file (a rollback, or an install
    # killed between this and the swap left them so): then the temp name is still there.
    temp.unlink(missing_ok=True)
    return backup


def _fsync_file(path: Path, mode: int | None) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if mode is not None:
            os.fchmod(fd, mode & 0o7777)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
