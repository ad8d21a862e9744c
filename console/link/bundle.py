"""The agent bundle this console ships: the `agent/` package less its simulator, and its digest.

agent.protocol.bundle_files decides that for both sides; only the demo's box gets the simulator.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import agent.protocol
from agent.protocol import bundle_digest, bundle_files

PACKAGE = Path(agent.protocol.__file__).resolve().parents[1]  # agent/protocol/__init__.py


@dataclass(frozen=True, slots=True)
class AgentBundle:
    """The files of the agent package, keyed by path relative to its parent folder."""

    files: tuple[tuple[str, bytes], ...]
    sha256: str
    """The agent's digest, which hello checks: the simulator is never in it."""
    source: Path
    """The folder that holds the `agent` package (what goes on PYTHONPATH)."""
    folder: str
    """Its folder's name under `<state_dir>/bundles/` on a box."""


@cache
def local_bundle() -> AgentBundle:
    """The agent package this console was installed with."""
    files = tuple(bundle_files(PACKAGE))
    sha256 = bundle_digest(files)
    return AgentBundle(files, sha256, PACKAGE.parent, sha256)


@cache
def demo_bundle() -> AgentBundle:
    """The same bundle and digest with the simulator, whose own digest names the folder too."""
    bundle, simulator = local_bundle(), tuple(bundle_files(PACKAGE, simulator=True))
    folder = f"{bundle.sha256}+simulator-{bundle_digest(simulator)[:16]}"
    return dataclasses.replace(bundle, files=bundle.files + simulator, folder=folder)
