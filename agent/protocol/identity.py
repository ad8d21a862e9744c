"""The agent bundle and its digest, so both sides can tell which code is running.

Both sides walk the package here, so they cannot disagree on what the bundle holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

SIMULATOR = "simulator"
"""The subpackage of `agent` left out of its bundle: the SGLang stand-in goes only to a demo box."""


def bundle_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 that names an agent bundle: over its files' relative paths and contents."""
    digest = hashlib.sha256()
    for path, content in sorted(files):
        digest.update(path.encode() + b"\0" + str(len(content)).encode() + b"\0" + content)
    return digest.hexdigest()


def bundle_paths(package: Path, simulator: bool = False) -> list[Path]:
    """The bundle's files: `package`'s sources less the simulator's (with `simulator`, those)."""
    return [
        path
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in (parts := path.relative_to(package).parts)
        and (parts[0] == SIMULATOR) == simulator
    ]


def bundle_files(package: Path, simulator: bool = False) -> list[tuple[str, bytes]]:
    """Those files as (path relative to `package`'s parent, content): what the digest covers."""
    paths = bundle_paths(package, simulator)
    return [(path.relative_to(package.parent).as_posix(), path.read_bytes()) for path in paths]
