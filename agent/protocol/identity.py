"""The digest that names an agent bundle, so both sides can tell which code is running."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def bundle_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """The sha256 that names an agent bundle: over its files' relative paths and contents."""
    digest = hashlib.sha256()
    for path, content in sorted(files):
        digest.update(path.encode() + b"\0" + str(len(content)).encode() + b"\0" + content)
    return digest.hexdigest()
