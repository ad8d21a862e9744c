"""The digest of code on disk, recomputed only when a file in it changed.

A stale-code check runs on every snapshot; hashing a package each second would be waste, so
the digest is cached on the (path, mtime, size) of every file.
"""

from __future__ import annotations

from pathlib import Path

from agent.protocol import bundle_digest, bundle_files
from agent.protocol.identity import bundle_paths

_cache: dict[str, tuple[tuple[tuple[str, int, int], ...], str]] = {}


def code_digest(path: str) -> str | None:
    """The bundle digest of the package folder at `path`, or None if it is not one."""
    folder = Path(path)
    try:
        stamp = tuple(
            (str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in bundle_paths(folder)
        )
    except OSError:
        return None
    if not stamp:
        return None
    cached = _cache.get(path)
    if cached is None or cached[0] != stamp:
        _cache[path] = (stamp, bundle_digest(bundle_files(folder)))
    return _cache[path][1]
