"""Which agent code is running: the sha256 of the agent bundle this process was loaded from.

The console computes the same digest (agent.protocol.bundle_files walks for both sides), so a
hello tells it at once whether the host runs the code it ships.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from agent.protocol import bundle_digest, bundle_files

AGENT_PACKAGE = Path(__file__).resolve().parent


@cache
def running_bundle_sha256() -> str:
    """The digest of the agent code this process runs."""
    return bundle_digest(bundle_files(AGENT_PACKAGE))
