"""A real, small filesystem that fills up: a tmpfs mounted for one test, grown to free space.

Mounting needs root (CAP_SYS_ADMIN); where it is refused the test is skipped with the reason.
RLIMIT_FSIZE cannot stand in for it: it gives EFBIG, not ENOSPC, and never fills a folder that
another process (the agent) watches.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class SmallFs:
    """A mounted tmpfs of a fixed size."""

    path: Path

    def resize(self, size_kib: int) -> None:
        """Grow (or shrink) it in place: the files stay, the free space changes."""
        _mount("-o", f"remount,size={size_kib}k", str(self.path))

    def free_bytes(self) -> int:
        """Bytes an unprivileged write could still use."""
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def fill(self, leave_bytes: int = 0) -> Path:
        """Take all the free space but `leave_bytes` (rounded to pages) with one file."""
        filler = self.path / ".filler"
        with filler.open("ab") as handle:
            while self.free_bytes() > leave_bytes:
                want = self.free_bytes() - leave_bytes
                try:
                    handle.write(b"\0" * min(want, 1 << 20))
                    handle.flush()
                except OSError:
                    break
        return filler


def mount_refusal() -> str | None:
    """Why a tmpfs cannot be mounted here, or None when it can."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root (CAP_SYS_ADMIN)"
    if shutil.which("mount") is None:
        return "no mount command"
    return None


@contextlib.contextmanager
def small_tmpfs(path: Path, size_kib: int) -> Iterator[SmallFs]:
    """Mount a tmpfs of `size_kib` at `path` for the block; skips the test where it cannot."""
    refusal = mount_refusal()
    if refusal is not None:
        pytest.skip(f"{refusal}; the full-disk test needs a real filesystem to fill")
    with contextlib.ExitStack() as stack:
        try:
            mounted = stack.enter_context(mounted_tmpfs(path, size_kib))
        except RuntimeError as exc:
            pytest.skip(f"cannot mount a tmpfs here ({exc}); the full-disk test needs one")
        yield mounted


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size_kib: int) -> Iterator[SmallFs]:
    """Mount a tmpfs of `size_kib` at `path` for the block; RuntimeError says why it cannot."""
    refusal = mount_refusal()
    if refusal is not None:
        raise RuntimeError(refusal)
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "tmpfs", str(path))
    try:
        yield SmallFs(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False, capture_output=True)


@contextlib.contextmanager
def tmpfs_or_none(path: Path, size_kib: int) -> Iterator[SmallFs | str]:
    """A mounted tmpfs, or the reason there is none (for callers that have a fallback)."""
    with contextlib.ExitStack() as stack:
        mounted: SmallFs | str
        try:
            mounted = stack.enter_context(mounted_tmpfs(path, size_kib))
        except RuntimeError as exc:
            mounted = str(exc)
        yield mounted


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(" ".join(done.stderr.split()) or f"mount exited {done.returncode}")
