"""The loopback SSH servers of the host-key matrix, each with a server-side witness.

A witness counts, from the server's own records, the sessions it opened and the agent-forwarding
requests it got, so "no session with an untrusted key" and "agent forwarding never asked" do not
rest on what the client says. asyncssh's server (in this process) is watched through its log
records; OpenSSH's sshd through its log file, which shows sessions but not refused agent
forwarding (that is logged at debug level only), so there the client's options are the witness.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.ssh_servers import SshEndpoint, asyncssh_server, openssh_server

ASYNCSSH_SESSION = "New SSH session requested"
"""Logged by asyncssh's server side only (its client logs "Requesting new SSH session")."""
ASYNCSSH_AGENT_REQUEST = "Agent forwarding request denied"
"""Logged by asyncssh's server when a client asks for agent forwarding it does not allow."""
SSHD_SESSION = "Accepted publickey for"


@dataclass(frozen=True, slots=True)
class WitnessedServer:
    """A server, how to reach it, and what it saw."""

    kind: str
    endpoint: SshEndpoint
    sessions: Callable[[], int]
    """Sessions the server has authenticated so far."""
    agent_requests: Callable[[], int] | None
    """Agent-forwarding requests it has received so far; None where it cannot tell."""


class _LogCounter(logging.Handler):
    """Counts asyncssh log records that contain given phrases."""

    def __init__(self, phrases: tuple[str, ...]) -> None:
        super().__init__(logging.INFO)
        self.counts = dict.fromkeys(phrases, 0)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for phrase in self.counts:
            if phrase in message:
                self.counts[phrase] += 1


@contextlib.contextmanager
def _asyncssh_log_counter() -> Iterator[_LogCounter]:
    logger = logging.getLogger("asyncssh")
    counter = _LogCounter((ASYNCSSH_SESSION, ASYNCSSH_AGENT_REQUEST))
    level, propagate = logger.level, logger.propagate
    logger.addHandler(counter)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # the witness only counts; nothing else needs these records
    try:
        yield counter
    finally:
        logger.removeHandler(counter)
        logger.setLevel(level)
        logger.propagate = propagate


@contextlib.asynccontextmanager
async def witnessed_asyncssh(folder: Path) -> AsyncIterator[WitnessedServer]:
    """The asyncssh loopback server (tests/support/ssh_servers.py), watched through its log."""
    with _asyncssh_log_counter() as counter:
        async with asyncssh_server(folder) as server:
            yield WitnessedServer(
                "asyncssh",
                server.endpoint,
                lambda: counter.counts[ASYNCSSH_SESSION],
                lambda: counter.counts[ASYNCSSH_AGENT_REQUEST],
            )


@contextlib.contextmanager
def witnessed_sshd(folder: Path) -> Iterator[WitnessedServer]:
    """OpenSSH's sshd on loopback (tests/support/ssh_servers.py), watched through its log file."""
    log = folder / "sshd.log"
    with openssh_server(folder) as endpoint:
        yield WitnessedServer(
            "sshd",
            endpoint,
            lambda: log.read_text(errors="replace").count(SSHD_SESSION),
            None,
        )


@contextlib.asynccontextmanager
async def running_ssh_agent(folder: Path) -> AsyncIterator[str | None]:
    """A real ssh-agent on a socket in `folder` (None when ssh-agent is not installed)."""
    binary = shutil.which("ssh-agent")
    if binary is None:
        yield None
        return
    socket = folder / "agent.sock"
    folder.mkdir(parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        binary, "-D", "-a", str(socket),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(250):
            if socket.exists() or process.returncode is not None:
                break
            await asyncio.sleep(0.02)
        yield str(socket) if socket.exists() else None
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


@contextlib.contextmanager
def environment(name: str, value: str | None) -> Iterator[None]:
    """Set (or, with None, unset) one environment variable for a block."""
    saved = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved
