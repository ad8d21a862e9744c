"""The files the deploy_interrupt scenario ships, and what it checks on the target side.

Each version of the mapped folder is a few files of different sizes and modes (one large enough
that its upload takes a while); every version has new bytes, so a target is old, new, or
something else, by sha256. This module only writes the local side and reads the target side,
except for ageing upload leftovers the way time passing would.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from console.link.file_channel import FileChannel

SHIPPED = (
    ("data/weights.bin", 0o600, 0),
    ("lib/config.json", 0o640, 60_000),
    ("run.py", 0o755, 2_000),
)
"""(path under the mapping, mode, size), in the order a deploy ships them; size 0 is the large
file, whose size the scenario picks."""
LARGE = "data/weights.bin"
UPLOAD_MARK = ".eagle-upload-"
BACKUP_SUFFIX = ".eagle-backup"
SETTLE_POLL_S = 0.05
SETTLE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Version:
    """One version of every shipped file: its sha256 by path under the mapping."""

    number: int
    sha256: dict[str, str]


def write_version(local: Path, number: int, large_bytes: int, rng: random.Random) -> Version:
    """Write version `number` of every shipped file under `local`, each with its mode."""
    hashes = {}
    for relative, mode, size in SHIPPED:
        path = local / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        content = f"{relative} version {number}\n".encode() + rng.randbytes(size or large_bytes)
        path.write_bytes(content)
        path.chmod(mode)
        hashes[relative] = hashlib.sha256(content).hexdigest()
    return Version(number, hashes)


def sha256_of(path: Path) -> str | None:
    """The file's sha256, or None if it is missing."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def classify_targets(remote: Path, old: Version, new: Version) -> dict[str, str]:
    """old, new or other for each shipped target."""
    states = {}
    for relative, _, _ in SHIPPED:
        digest = sha256_of(remote / relative)
        states[relative] = (
            "old" if digest == old.sha256[relative] else "new" if digest == new.sha256[relative]
            else "other"
        )  # fmt: skip
    return states


def wrong_modes(remote: Path) -> list[str]:
    """Shipped targets whose mode bits are not the ones they were shipped with."""
    wrong = []
    for relative, mode, _ in SHIPPED:
        path = remote / relative
        if path.exists() and path.stat().st_mode & 0o7777 != mode:
            wrong.append(f"{relative} {oct(path.stat().st_mode & 0o7777)} (want {oct(mode)})")
    return wrong


def wrong_backups(remote: Path, old: Version) -> list[str]:
    """Shipped targets whose backup is not the version the trial started from."""
    return [
        relative
        for relative, _, _ in SHIPPED
        if sha256_of(remote / (relative + BACKUP_SUFFIX)) != old.sha256[relative]
    ]


def upload_leftovers(remote: Path) -> list[Path]:
    """Upload temp files under `remote` (staged uploads, backup and rollback temps)."""
    return sorted(path for path in remote.rglob(f".*{UPLOAD_MARK}*") if path.is_file())


def age(paths: list[Path], seconds: float) -> None:
    """Set the mtime of `paths` `seconds` back, as if that much time had passed."""
    then = time.time() - seconds
    for path in paths:
        os.utime(path, (then, then))


async def wait_settled(remote: Path) -> list[Path]:
    """The upload leftovers once none has changed size or mtime for a few polls."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    previous, steady = None, 0
    while steady < 3 and time.monotonic() < deadline:
        current = _stamps(remote)
        steady = steady + 1 if current == previous else 0
        previous = current
        await asyncio.sleep(SETTLE_POLL_S)
    return upload_leftovers(remote)


def _stamps(remote: Path) -> list[tuple[str, int, int]]:
    stamps = []
    for path in upload_leftovers(remote):
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        stamps.append((path.name, info.st_size, info.st_mtime_ns))
    return stamps


class FinishingChannel:
    """A file channel whose uploads, once begun, finish even if the deploy is cancelled.

    That is what the local channel does anyway (its write runs in a thread that a cancel does
    not stop); this one lets the scenario wait for those writes before it looks at the target.
    """

    def __init__(self, inner: FileChannel) -> None:
        self.inner = inner
        self.uploads: list[asyncio.Future[None]] = []

    async def read(self, path: str) -> bytes | None:
        """The file's bytes, or None."""
        return await self.inner.read(path)

    async def stage(self, path: str, content: bytes, mode: int) -> None:
        """Stage through the inner channel; a cancel leaves the write to finish."""
        upload = asyncio.ensure_future(self.inner.stage(path, content, mode))
        self.uploads.append(upload)
        await asyncio.shield(upload)

    async def finished(self) -> None:
        """Wait for every upload that was begun."""
        await asyncio.gather(*self.uploads, return_exceptions=True)
        self.uploads.clear()


def outcome_counts(states: list[dict[str, str]]) -> str:
    """Totals of old/new/other targets and how the trials split."""
    targets = Counter(state for trial in states for state in trial.values())
    shapes = Counter(
        "all old" if set(trial.values()) == {"old"} else "all new"
        if set(trial.values()) == {"new"} else "mixed"
        for trial in states
    )  # fmt: skip
    return (
        f"targets after the interrupted deploy: {targets['old']} old, {targets['new']} new, "
        f"{targets['other']} other; trials: {shapes['all old']} all old, {shapes['mixed']} "
        f"mixed, {shapes['all new']} all new"
    )
