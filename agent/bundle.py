"""Which agent code is running: the sha256 of the agent package this process was loaded from.

The console computes the same digest over the files it uploads, so a hello tells it at once
whether the host runs the code it ships.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from agent.protocol import bundle_digest

AGENT_PACKAGE = Path(__file__).resolve().parent


def bundle_files(package: Path = AGENT_PACKAGE) -> list[tuple[str, bytes]]:
    """Every source file of the agent package, as (path relative to its parent, content)."""
    return [
        (path.relative_to(package.parent).as_posix(), path.read_bytes())
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in path.parts
    ]


@cache
def running_bundle_sha256() -> str:
    """The digest of the agent code this process runs."""
    return bundle_digest(bundle_files())
