"""Loopback ports for servers a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on right now (the caller's server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
