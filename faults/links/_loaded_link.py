"""The parts of the loaded_stops scenario that are not the stops: the doors, the load, the pings.

An SSH server to reach the agent through (OpenSSH's sshd or the asyncssh server), processes that
spin on the CPU, and a pinger that measures the console's link while a block runs. Nothing here
stops a job or decides what passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import PING, PingParams
from console.link.agent_link import LinkError
from console.link.host_connection import HostConnection
from faults.harness.link import LinkWatch, loopback_server
from tests.support.ssh_servers import openssh_server

PING_EVERY_S = 0.2
PING_TIMEOUT_S = 30.0
"""An answer later than this counts as unanswered: the link is as good as dropped."""
GOAL_P99_MS = 100.0
"""What a ping should take while a stop runs (a figure to report, not a pass criterion)."""


@dataclass(frozen=True, slots=True)
class Door:
    """How the console reaches one SSH server."""

    kind: str
    port: int
    identity: Path
    known_hosts: Path


@contextlib.asynccontextmanager
async def door(kind: str, folder: Path) -> AsyncIterator[Door]:
    """OpenSSH's sshd, or the asyncssh server in a process of its own, on loopback."""
    if kind == "openssh":
        with openssh_server(folder) as endpoint:
            yield Door(kind, endpoint.port, endpoint.identity, endpoint.known_hosts)
        return
    async with loopback_server(folder) as server:
        yield Door(kind, server.port, server.identity, server.known_hosts)


@contextlib.contextmanager
def spinning(count: int) -> Iterator[None]:
    """`count` processes that burn a CPU each, for as long as the block runs."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@dataclass
class Pings:
    """Pings sent on a console's link while something runs, and what came of them."""

    answered_ms: list[float] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def during(self, session: HostConnection) -> AsyncIterator[None]:
        """Ping on the session's link every PING_EVERY_S while the block runs.

        The pinger is told to end rather than cancelled: on Python 3.11 `asyncio.wait_for`
        (under `AgentLink.call`) swallows a cancel that lands as its answer arrives, and a
        cancelled pinger would then ping on forever.
        """
        ending = asyncio.Event()
        pinger = asyncio.create_task(self._ping(session, ending))
        try:
            yield
        finally:
            ending.set()
            await pinger  # at most one ping's time (PING_TIMEOUT_S)

    async def _ping(self, session: HostConnection, ending: asyncio.Event) -> None:
        while not ending.is_set():
            link, sent = session.link, time.monotonic()
            try:
                if link is None:
                    raise LinkError("no link")
                await link.call(PING, PingParams(), timeout_s=PING_TIMEOUT_S)
                self.answered_ms.append(1000 * (time.monotonic() - sent))
            except LinkError as exc:
                self.unanswered.append(str(exc))
            with contextlib.suppress(TimeoutError):
                pause = max(0.0, PING_EVERY_S - (time.monotonic() - sent))
                await asyncio.wait_for(ending.wait(), pause)

    def figures(self) -> str:
        """p50, p99 and max of the answered pings, against the goal."""
        if not self.answered_ms:
            return "no ping answered"
        pings = sorted(self.answered_ms)
        p99 = pings[min(len(pings) - 1, int(0.99 * len(pings)))]
        verdict = "met" if p99 < GOAL_P99_MS else "MISSED"
        return (
            f"{len(pings)} pings answered, p50 {statistics.median(pings):.0f} ms, p99 "
            f"{p99:.0f} ms, max {pings[-1]:.0f} ms (goal p99 < {GOAL_P99_MS:.0f} ms: {verdict})"
        )


def drops_after(watch: LinkWatch, since: float) -> tuple[int, set[str]]:
    """How often the link left "up" after `since`, and what it said when it did."""
    pairs = zip(watch.states, watch.states[1:], strict=False)
    fell = [after for (_, before), (at, after) in pairs
            if at >= since and before.status == "up" and after.status != "up"]  # fmt: skip
    return len(fell), {state.detail for state in fell}


def why_not_up(watch: LinkWatch) -> str:
    """What the link said while it never came up (its last states, or its session's error)."""
    said = [f"{state.status}: {state.detail}" for _, state in watch.states[-3:]]
    if watch.session_error:
        said.append(f"HostConnection.run raised {watch.session_error}")
    return "; ".join(said) or "no state reported"
