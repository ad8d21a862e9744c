"""`eagle-console trust HOST`: show the key a host offers and pin it only on a typed "yes"."""

from __future__ import annotations

import asyncio
import sys

from console.config import LOCAL, ConfigError, HostConfig
from console.link.agent_link import LinkError
from console.link.host_keys import fetch_offered_key, pin_host_key
from console.link.ssh_link import connect_options
from console.model.safe_text import sanitise


def trust_host(host: HostConfig, *, assume_yes: bool) -> int:
    """Pin the host's key after showing its fingerprint; returns the exit code."""
    if host.is_local:
        raise ConfigError(
            f'hosts.{host.name}: ssh = "{LOCAL}" runs the agent on this machine: '
            "there is no host key to trust"
        )
    offered = asyncio.run(fetch_offered_key(host, connect_options(host)))
    if offered is None:
        raise LinkError(f"{host.name}: cannot fetch the host key of {host.ssh}")
    if offered.trusted:
        pinned = f"{host.name}: {offered.algorithm} {offered.fingerprint} is already pinned."
        print(sanitise(pinned))  # noqa: T201
        return 0
    if offered.changed:
        pin_host_key(host, offered)  # raises the loud refusal, naming both fingerprints
    print(sanitise(f"{host.name} ({host.ssh}) offers {offered.algorithm} {offered.fingerprint}"))  # noqa: T201
    if not assume_yes and not _confirmed():
        print("not pinned.")  # noqa: T201
        return 1
    path = pin_host_key(host, offered)
    print(sanitise(f"pinned {offered.fingerprint} for {host.name} in {path}"))  # noqa: T201
    return 0


def _confirmed() -> bool:
    print("Compare it with the host's own `ssh-keygen -lf` output. Type yes to pin it: ", end="")  # noqa: T201
    sys.stdout.flush()
    return sys.stdin.readline().strip() == "yes"
