"""The agent bundle this console ships: the `agent/` package's files and their digest."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import agent.protocol
from agent.protocol import bundle_digest


@dataclass(frozen=True, slots=True)
class AgentBundle:
    """The files of the agent package, keyed by path relative to its parent folder."""

    files: tuple[tuple[str, bytes], ...]
    sha256: str
    source: Path
    """The folder that holds the `agent` package (what goes on PYTHONPATH)."""


@cache
def local_bundle() -> AgentBundle:
    """The agent package this console was installed with."""
    package = Path(agent.protocol.__file__).resolve().parents[1]  # agent/protocol/__init__.py
    files = tuple(
        (path.relative_to(package.parent).as_posix(), path.read_bytes())
        for path in sorted(package.rglob("*.py"))
        if "__pycache__" not in path.parts
    )
    return AgentBundle(files, bundle_digest(files), package.parent)
