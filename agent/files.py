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
import time
from dataclasses import dataclass
from pathlib import Path

from agent.host.regular_files import NotRegularFileError, open_regular

STAGE_MARK = ".eagle-upload-"
BACKUP_SUFFIX = ".eagle-backup"
STALE_UPLOAD_S = 60.0
"""An upload temp older than this belongs to a deploy that was cut off, not to one in progress."""


class FileError(Exception):
    """A path or an install that is refused; the message says why."""


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
    """Put the previous version back (atomically); returns its sha256."""
    backup = backup_path(target)
    if not backup.is_file():
        raise FileError(f"{target}: no previous version to roll back to")
    refuse_identical_rollback(target, backup)
    temp = target.with_name(f".{target.name}{STAGE_MARK}rollback-{os.getpid()}")
    temp.unlink(missing_ok=True)
    os.link(backup, temp)
    os.replace(temp, target)
    _fsync_dir(target.parent)
    return sha256_of(target) or ""


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
