"""The long-lived agent daemon: one unix socket in the private state directory, no network port.

It is started detached by `attach` and outlives every console. Exactly one runs per state
directory: it holds an exclusive lock on `daemon.lock` for its whole life. On SIGTERM or SIGINT it
closes its socket and exits; jobs it started are not its children's children in any way that
would make them die with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sys
import time
from pathlib import Path

from agent.bundle import running_bundle_sha256
from agent.core import AgentCore
from agent.protocol import AGENT_VERSION, MAX_LINE_BYTES, PROTOCOL_VERSION, Event, encode
from agent.session import Session
from agent.state import SOCKET_NAME, StatePaths, write_json_atomic

log = logging.getLogger(__name__)


def daemon_identity() -> dict[str, object]:
    """What `daemon.json` says about this process, for attach to compare with its own bundle."""
    return {
        "pid": os.getpid(),
        "agent_version": AGENT_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "bundle_sha256": running_bundle_sha256(),
        "started_at": time.time(),
        "python": sys.executable,
    }


def serve(paths: StatePaths) -> int:
    """Run the daemon until a stop signal; returns the exit code."""
    lock_fd = _take_daemon_lock(paths.daemon_lock)
    if lock_fd is None:
        print("an agent daemon already runs in", paths.root, file=sys.stderr)  # noqa: T201
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    os.chdir(paths.root)
    try:
        asyncio.run(_serve(paths))
    finally:
        Path(paths.root / SOCKET_NAME).unlink(missing_ok=True)
        paths.daemon_info.unlink(missing_ok=True)
        os.close(lock_fd)
    return 0


def _take_daemon_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class SessionHub:
    """The consoles connected now; events go to every one that has said hello."""

    def __init__(self) -> None:
        self.sessions: set[Session] = set()

    async def broadcast(self, event: Event) -> None:
        """Queue `event` for every greeted session; never waits for any of them.

        A session whose console stopped reading has no room left and is cut off instead.
        """
        data = encode(event)
        for session in list(self.sessions):
            if session.greeted:
                session.offer_event(data)


async def _serve(paths: StatePaths) -> None:
    hub = SessionHub()
    core = AgentCore(paths, hub.broadcast)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET_NAME)
    server = await asyncio.start_unix_server(
        lambda r, w: _serve_client(core, hub, r, w), SOCKET_NAME, limit=MAX_LINE_BYTES
    )
    os.chmod(SOCKET_NAME, 0o600)
    write_json_atomic(paths.daemon_info, daemon_identity())
    log.info("agent %s serving in %s", AGENT_VERSION, paths.root)
    async with server:
        await stop.wait()
    log.info("agent stopping")


async def _serve_client(
    core: AgentCore, hub: SessionHub, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    session = Session(core, reader, writer, abort=writer.transport.abort)
    hub.sessions.add(session)
    try:
        await session.run()
    except (ConnectionError, asyncio.IncompleteReadError):
        log.info("console connection dropped")
    finally:
        hub.sessions.discard(session)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
