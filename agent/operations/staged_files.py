"""The files a redeploy swaps in: checked before anything stops, swapped and rolled back after.

A redeploy must not stop a run for an upload that cannot be installed, so every staged file is
confined to the deploy roots and checked against its sha256 when the redeploy is asked for.
Swapping one in and putting the old one back are the same atomic steps a deploy uses
(agent/files.py); a file that is already the new version is left alone, and remembered as not
ours to roll back.
"""

from __future__ import annotations

import os

from agent.files import (
    FileError,
    NothingToRollBackError,
    Roots,
    backup_path,
    check_staged,
    install,
    rollback,
    sha256_of,
)
from agent.protocol import StagedFile


def check_uploads(roots: Roots, files: tuple[StagedFile, ...]) -> None:
    """Raise FileError naming the first staged file that could not be swapped in."""
    for item in files:
        target, staged = roots.confine(item.target), roots.confine(item.staged)
        check_staged(target, staged)
        actual = sha256_of(staged)
        if actual != item.sha256:
            raise FileError(f"{item.staged}: upload has sha256 {actual}, expected {item.sha256}")


def already_new(roots: Roots, item: StagedFile) -> bool:
    """True when the target already holds the new bytes."""
    return sha256_of(roots.confine(item.target)) == item.sha256


def swap_in(roots: Roots, item: StagedFile) -> None:
    """Install one staged file over its target, keeping the old one as its backup."""
    _ = install(roots.confine(item.target), roots.confine(item.staged), item.sha256, item.mode)


def put_back(roots: Roots, target: str) -> str:
    """Restore the version a swap replaced; says what happened in a few words."""
    path = roots.confine(target)
    if not os.path.lexists(backup_path(path)):
        return f"{target}: kept (it was new: there is no older version)"
    try:
        _ = rollback(path)
    except NothingToRollBackError:
        return f"{target}: already the old version"
    return f"{target}: old version back"


__all__ = ["FileError", "already_new", "check_uploads", "put_back", "swap_in"]
