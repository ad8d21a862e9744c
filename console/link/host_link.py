"""Open the link to a configured host the way its config says: over SSH, or as a local subprocess.

Every command that talks to a host opens it here, so `ssh = "local"` works wherever SSH does.
"""

from __future__ import annotations

from pathlib import Path

from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.bundle import AgentBundle
from console.link.local_link import open_local_link
from console.link.ssh_link import open_ssh_link


async def open_host_link(host: HostConfig, bundle: AgentBundle | None = None) -> AgentLink:
    """Connect to `host`, start its agent (from `bundle` over SSH), complete hello, or LinkError."""
    if not host.is_local:
        return await open_ssh_link(host, bundle)
    try:
        return await open_local_link(local_state_dir(host), host.pipeline, host.python)
    except LinkError as exc:
        raise LinkError(f"{host.name} (local): {exc}") from None


def local_state_dir(host: HostConfig) -> Path:
    """A local host's state dir, `~` being this user's home."""
    return Path(host.state_dir).expanduser()
