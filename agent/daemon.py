"""The long-lived agent daemon: one unix socket in the private state directory, no network port.

It is started detached by `attach` and outlives every console. Exactly one runs per state
directory: it holds an exclusive lock on `daemon.lock` for its whole life, and leaves by itself
when that directory is deleted or replaced. On SIGTERM or SIGINT it
ends its console sessions, then its background tasks, then closes its socket and exits; jobs it started are not its children's children in any way that
would make them die with it. From the stop signal on it has EXIT_DEADLINE_S to end: whatever it
still waits on then (a peer that drips, a thread that will not return), it exits as it is, so a
stop always frees the lock for the next daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agent.bundle import running_bundle_sha256
from agent.host.autostart import CODE_LINK, point_code_link
from agent.protocol import AGENT_VERSION, MAX_LINE_BYTES, PROTOCOL_VERSION, Event, encode
from agent.serving.agent_methods import AgentMethods
from agent.serving.session import Session
from agent.state import SOCKET_NAME, StatePaths, write_json_atomic
from agent.state.private_files import open_private
from agent.state.watch import FolderIdentity, identity_of, leave_when_gone
from agent.tasks import CLOSE_TIMEOUT_S
from agent.wiring import AgentParts

log = logging.getLogger(__name__)

HISTORY_START_WAIT_S = 2.0
"""The socket opens after the start is in the history, or after this long (a huge or locked file)."""

EXIT_DEADLINE_S = 12.0
"""From a stop signal to the process's end; within the 15 s `stop_daemon` waits before SIGKILL."""


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
    started_in = identity_of(paths)
    try:
        asyncio.run(_serve(paths, started_in))
    finally:
        if started_in is not None and identity_of(paths) == started_in:  # else not ours to clean
            Path(paths.root / SOCKET_NAME).unlink(missing_ok=True)
            paths.daemon_info.unlink(missing_ok=True)
        os.close(lock_fd)
    return 0


def _take_daemon_lock(path: Path) -> int | None:
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class SessionHub:
    """The consoles connected now; events go to every one that has said hello."""

    def __init__(self) -> None:
        self.sessions: dict[Session, asyncio.Task[Any]] = {}
        """Each session and the task serving it."""
        self.closing = False

    def admit(self, session: Session) -> bool:
        """Serve `session` from the current task, unless the daemon is shutting down."""
        task = asyncio.current_task()
        if self.closing or task is None:
            return False
        self.sessions[session] = task
        return True

    async def close(self) -> None:
        """End every session (each closes its own tasks), waiting at most CLOSE_TIMEOUT_S."""
        self.closing = True
        serving = set(self.sessions.values())
        for task in serving:
            task.cancel()
        if serving:
            await asyncio.wait(serving, timeout=CLOSE_TIMEOUT_S)

    async def broadcast(self, event: Event) -> None:
        """Queue `event` for every greeted session; never waits for any of them.

        A session whose console stopped reading has no room left and is cut off instead.
        """
        data = encode(event)
        for session in list(self.sessions):
            if session.greeted:
                session.offer_event(data)


async def _serve(paths: StatePaths, started_in: FolderIdentity | None) -> None:
    hub = SessionHub()
    core = AgentParts(paths, hub.broadcast)
    agent = AgentMethods(core)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(SOCKET_NAME)
    await core.history.add_event("agent_started", "agent", f"agent {AGENT_VERSION} started")
    # The timeline a first console reads opens with the start, unless the history is held up.
    await asyncio.to_thread(core.history.written, HISTORY_START_WAIT_S)
    server = await asyncio.start_unix_server(
        lambda r, w: _serve_client(agent, hub, r, w), SOCKET_NAME, limit=MAX_LINE_BYTES
    )
    os.chmod(SOCKET_NAME, 0o600)
    write_json_atomic(paths.daemon_info, daemon_identity())
    _point_boot_entry(paths)
    core.operations.resume()
    _ = core.tasks.spawn(core.observer.run(), "observer")
    if started_in is not None:
        _ = core.tasks.spawn(leave_when_gone(paths, started_in, stop), "state folder watch")
    log.info("agent %s serving in %s", AGENT_VERSION, paths.root)
    await stop.wait()
    exit_within(EXIT_DEADLINE_S)
    await _shut_down(hub, core, server)


def exit_within(seconds: float) -> threading.Timer:
    """End the process `seconds` from now unless it has ended by itself.

    A daemon thread's timer: the orderly shutdown still runs, and it is never waited for.
    """
    timer = threading.Timer(seconds, _exit_now, args=(seconds,))
    timer.daemon = True
    timer.start()
    return timer


def _exit_now(seconds: float) -> None:
    log.error(
        "agent did not stop within %g s of its stop signal (a task or thread would not end); "
        "exiting as it is", seconds,
    )  # fmt: skip
    os._exit(1)


def _point_boot_entry(paths: StatePaths) -> None:
    """Keep `<state>/agent-code` on this daemon's code, for the @reboot line (host/autostart)."""
    try:
        point_code_link(paths.root)
    except OSError as exc:
        log.warning("cannot point %s at this agent's code: %s", paths.root / CODE_LINK, exc)


async def _shut_down(hub: SessionHub, core: AgentParts, server: asyncio.Server) -> None:
    """Close in order: the sessions, the core's tasks, then the socket.

    Sessions go first so no console is answered from a half-closed core.
    """
    log.info("agent stopping: closing %d console sessions", len(hub.sessions))
    await hub.close()
    log.info("agent stopping: closing %d background tasks", core.tasks.active)
    await core.tasks.close()
    core.end_watch.close()
    log.info("agent stopping: keeping how far each dataset file was read")
    await asyncio.to_thread(core.keep_scans)
    await asyncio.to_thread(core.history.close)
    log.info("agent stopping: closing the socket")
    server.close()
    await server.wait_closed()
    log.info("agent stopped")


async def _serve_client(
    agent: AgentMethods,
    hub: SessionHub,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    session = Session(agent, reader, writer, abort=writer.transport.abort)
    try:
        if hub.admit(session):
            await session.run()
    except (ConnectionError, asyncio.IncompleteReadError):
        log.info("console connection dropped")
    finally:
        hub.sessions.pop(session, None)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
