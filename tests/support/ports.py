"""Loopback ports for servers a test starts.

A server that must be told its port (sshd, the router, a simulator that comes back on the same
port) gets one below the kernel's ephemeral range, where no `bind(("", 0))` and no outgoing
connection of any process can take it between the pick and the server's bind. Each pytest-xdist
worker picks from its own slice, so two workers of one run never pick the same port; a port
something already listens on is passed over.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
import threading
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
FIRST_PORT = 10000
SLICE_PORTS = 1000
"""Ports per xdist worker: enough for every server one worker starts in a run."""


def free_port() -> int:
    """A loopback port nothing listens on right now (the caller's server binds it a moment later)."""
    ports = _worker_slice()
    if ports is None:
        return _kernel_port()
    for _ in ports:
        with _picking:
            port = ports[next(_picks) % len(ports)]
        if _bindable(port):
            return port
    raise RuntimeError(f"every port in {ports} is taken")


def _worker_slice() -> range | None:
    """This worker's ports below the ephemeral range, or None where there is no room for it."""
    try:
        worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
        ephemeral_low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    start = FIRST_PORT + worker * SLICE_PORTS
    return range(start, start + SLICE_PORTS) if start + SLICE_PORTS <= ephemeral_low else None


def _kernel_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


_picking = threading.Lock()
_picks = itertools.count(random.randrange(SLICE_PORTS))
"""Each pick takes the next port of the slice, from a random start: another run may use it too."""
