"""The real console link to a box, set up for the link scenarios (drops, black holes, loads, cuts).

A loopback SSH server in its own process, the console's self-healing `HostConnection` pointed at it
over `open_ssh_link`, a job that writes numbered lines, and the check that the log bytes that
crossed the link are the job's log file, byte for byte. Nothing here injects a fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from agent.host.procfs import is_same_process, start_ticks
from agent.host.signals import kill_group
from agent.protocol import (
    JOBS_LIST,
    Event,
    JobInfo,
    JobsParams,
    JobSpec,
    LogChunk,
    Method,
    PipelineConfig,
)
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from console.link.host_connection import HostConnection, LinkState
from console.link.loopback_ssh import write_known_hosts
from console.link.ssh_link import open_ssh_link
from faults.result import ScenarioResult
from tests.support.simulator_process import agent_env
from tests.support.waits import wait_until

P = TypeVar("P")
R = TypeVar("R")

POLL_S = 0.02
SERVER_READY_S = 20.0
FIRST_CONNECT_S = 60.0
"""The first connect uploads the agent bundle over SFTP and starts the daemon."""
TICKER = "ticker"
TICKER_SCRIPT = (
    "import sys, time\n"
    "i = 0\n"
    "while True:\n"
    "    sys.stdout.write('tick %08d\\n' % i)\n"
    "    sys.stdout.flush()\n"
    "    i += 1\n"
    "    time.sleep(0.01)\n"
)
TICK = re.compile(r"tick (\d{8})\n")


# ---------------------------------------------------------------- the SSH server, its own process


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """`python -m console.link.loopback_ssh FOLDER`, running in its own session."""

    pid: int
    port: int
    folder: Path

    @property
    def identity(self) -> Path:
        """The client key the server trusts."""
        return self.folder / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        """The server's host key, pinned for its own port."""
        return self.folder / "known_hosts"


@contextlib.asynccontextmanager
async def loopback_server(folder: Path) -> AsyncIterator[ServerProcess]:
    """Start the server, wait for its port file, and end its whole process group after."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / "loopback_ssh.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "console.link.loopback_ssh", str(folder)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=agent_env(),
            start_new_session=True,
        )  # fmt: skip
        try:
            port = await _port_written(folder / "port", process)
            yield ServerProcess(process.pid, port, folder)
        finally:
            await _end_group(process)


async def _port_written(path: Path, process: subprocess.Popen[bytes]) -> int:
    if not await wait_until(lambda: path.exists() or process.poll() is not None, SERVER_READY_S):
        raise RuntimeError(f"the loopback SSH server wrote no port within {SERVER_READY_S} s")
    if process.poll() is not None:
        raise RuntimeError(f"the loopback SSH server exited with {process.returncode}")
    return int(path.read_text())


async def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGCONT (it may be stopped), SIGTERM, then SIGKILL what is left of the group."""
    for signum in (signal.SIGCONT, signal.SIGTERM):
        with contextlib.suppress(ProcessLookupError):
            kill_group(process.pid, signum)
    await wait_until(lambda: process.poll() is not None, 5.0)
    with contextlib.suppress(ProcessLookupError):
        kill_group(process.pid, signal.SIGKILL)
    await asyncio.to_thread(process.wait)


def pin_known_hosts(server: ServerProcess, port: int, path: Path) -> Path:
    """A known_hosts pinning the server's host key for another port (a relay in front of it)."""
    algorithm, blob = server.known_hosts.read_text().split()[1:3]
    write_known_hosts(path, port, f"{algorithm} {blob}")
    return path


def host_config(
    server: ServerProcess,
    state_dir: Path,
    *,
    port: int | None = None,
    known_hosts: Path | None = None,
) -> HostConfig:
    """A host reached through the loopback server, running one `ticker` job; no ~/.ssh/config."""
    empty_ssh_config = server.folder.parent / "ssh_config"
    empty_ssh_config.touch()
    ticker = JobSpec(argv=("{python}", "-u", "-c", TICKER_SCRIPT), grace_s=2.0, term_grace_s=2.0)
    return HostConfig(
        name="faults",
        ssh=SshTarget("127.0.0.1", getpass.getuser(), port or server.port),
        python=sys.executable,
        state_dir=str(state_dir),
        known_hosts=str(known_hosts or server.known_hosts),
        identity=str(server.identity),
        ssh_config=str(empty_ssh_config),
        pipeline=PipelineConfig(jobs={TICKER: ticker}),
    )


# ---------------------------------------------------------------- the console's link, watched


@dataclass
class LinkWatch:
    """Every state and log chunk the HostConnection reported, with the monotonic time it came."""

    states: list[tuple[float, LinkState]] = field(default_factory=list)
    chunks: list[tuple[float, LogChunk]] = field(default_factory=list)
    session_error: str | None = None
    """What `HostConnection.run` (or its ending) raised: it should only ever be cancelled."""

    def on_state(self, state: LinkState) -> None:
        """HostConnection's state callback."""
        self.states.append((time.monotonic(), state))

    def on_event(self, host: str, event: Event) -> None:
        """HostConnection's event callback: keeps the log chunks."""
        if event.event == "log" and isinstance(event.data, LogChunk):
            self.chunks.append((time.monotonic(), event.data))

    def left_up_after(self, since: float) -> float | None:
        """When the link was first seen not up at or after `since`."""
        return next((at for at, s in self.states if at >= since and s.status != "up"), None)

    def detail_after(self, since: float) -> str:
        """What the first state not up after `since` said (the reason the link ended)."""
        found = next((s for at, s in self.states if at >= since and s.status == "down"), None)
        return found.detail if found else "?"

    def back_up_after(self, since: float, *, answered: bool = False) -> float | None:
        """When the link was up again after it went down at or after `since`.

        `answered` asks for the first ping answered on the new link (latency known).
        """
        down = self.left_up_after(since)
        if down is None:
            return None
        return next(
            (
                at
                for at, s in self.states
                if at > down and s.status == "up" and (s.latency_ms is not None or not answered)
            ),
            None,
        )

    def chunk_after(self, since: float) -> float | None:
        """When the first log chunk arrived after `since`."""
        return next((at for at, _ in self.chunks if at > since), None)

    def recovered_after(self, since: float, *, answered: bool = False) -> float | None:
        """Up again after a fall at or after `since`, and new log bytes arrived through it."""
        up = self.back_up_after(since, answered=answered)
        return self.chunk_after(up) if up is not None else None

    def received(self, name: str) -> list[LogChunk]:
        """The chunks of one log, in arrival order."""
        return [chunk for _, chunk in self.chunks if chunk.name == name]


@contextlib.asynccontextmanager
async def running_session(host: HostConfig, watch: LinkWatch) -> AsyncIterator[HostConnection]:
    """The console's HostConnection over `open_ssh_link`, running until the block ends."""

    async def opener() -> AgentLink:
        return await open_ssh_link(host)

    session = HostConnection(host.name, opener, watch.on_state, watch.on_event)
    runner = asyncio.create_task(session.run(), name=f"host session {host.name}")
    try:
        yield session
    finally:
        runner.cancel()
        try:
            await runner
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # reported by the scenario, as a broken invariant
            watch.session_error = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):
            await session.close()


def report_session_error(result: ScenarioResult, watch: LinkWatch) -> None:
    """A HostConnection that raised instead of reconnecting breaks the link's first promise."""
    if watch.session_error is not None:
        result.violate(f"HostConnection.run raised {watch.session_error} instead of reconnecting")


def is_up(session: HostConnection) -> bool:
    """The link is up and usable."""
    return session.state.status == "up" and session.link is not None


async def first_up(session: HostConnection, result: ScenarioResult) -> bool:
    """The first connect came within FIRST_CONNECT_S; else a violation (the run stops there)."""
    if await wait_until(lambda: is_up(session), FIRST_CONNECT_S):
        return True
    result.violate(f"the link never came up in {FIRST_CONNECT_S:g} s")
    return False


async def request_when_up(
    session: HostConnection,
    method: Method[P, R],
    params: P,
    *,
    key: str | None = None,
    timeout_s: float = 60,
) -> R:
    """Send a request on the session's link, waiting out drops; agent errors are raised."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        link = session.link
        if link is not None and session.state.status == "up":
            try:
                return await link.call(method, params, idempotency_key=key, timeout_s=15)
            except AgentRequestError:
                raise
            except LinkError:
                pass
        await asyncio.sleep(POLL_S)
    raise LinkError(f"no answer to {method.name} within {timeout_s:g} s")


# ---------------------------------------------------------------- the job and its log


@dataclass(frozen=True, slots=True)
class Ticker:
    """The running job: its process, named by pid and start time, and its log."""

    job_id: str
    pid: int
    start_ticks: int
    log_path: Path

    @property
    def log_name(self) -> str:
        """The name the agent serves the job's output under."""
        return f"job:{self.job_id}"

    def alive(self) -> bool:
        """The same process is still running (a recycled pid does not count)."""
        return is_same_process(self.pid, self.start_ticks)


async def own_jobs(session: HostConnection) -> tuple[JobInfo, ...]:
    """The agent's own jobs (external processes left out)."""
    listed = await request_when_up(session, JOBS_LIST, JobsParams())
    return tuple(job for job in listed.jobs if not job.external)


async def followed_ticker(session: HostConnection, job_id: str, timeout_s: float = 30) -> Ticker:
    """Wait until job `job_id` runs its child, name that process, and follow its log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = next((j for j in await own_jobs(session) if j.id == job_id), None)
        ticks = start_ticks(job.pid) if job is not None and job.pid else None
        if job is not None and job.pid and ticks is not None and job.log_path:
            ticker = Ticker(job.id, job.pid, ticks, Path(job.log_path))
            with contextlib.suppress(LinkError):  # a drop now is fine: the reconnect subscribes
                await session.follow_log(ticker.log_name, 0)
            return ticker
        await asyncio.sleep(0.05)
    raise LinkError(f"job {job_id} did not start its process within {timeout_s:g} s")


async def check_log(
    result: ScenarioResult, watch: LinkWatch, ticker: Ticker, timeout_s: float = 15
) -> None:
    """Once the ended job's log has all come, count its lines against those received.

    Lost and duplicated lines are counted, and every byte is checked.
    """

    def received_all() -> bool:
        chunks = watch.received(ticker.log_name)
        return bool(chunks) and chunks[-1].end_offset >= ticker.log_path.stat().st_size

    if not await wait_until(received_all, timeout_s):
        result.violate("the log received never caught up with the job's log file")
    written = ticker.log_path.read_bytes().decode()
    chunks = watch.received(ticker.log_name)
    text = "".join(chunk.text for chunk in chunks)
    _check_offsets(result, chunks)
    if text != written:
        at = next((i for i, (a, b) in enumerate(zip(text, written, strict=False)) if a != b), None)
        result.violate(
            f"log bytes differ from the job's log file: {len(text)} received, {len(written)} "
            f"written, first difference at byte {at if at is not None else min(len(text), len(written))}"
        )
    lines = [int(n) for n in TICK.findall(written)]
    if lines != list(range(len(lines))):
        result.violate("the job's own log is not one unbroken count (was the job restarted?)")
    got = Counter(int(n) for n in TICK.findall(text))
    result.attempted += len(lines)
    result.acknowledged += len(set(lines) & set(got))
    result.lost += len(set(lines) - set(got))
    result.duplicated += sum(count - 1 for count in got.values() if count > 1)


def _check_offsets(result: ScenarioResult, chunks: list[LogChunk]) -> None:
    expected = 0
    for chunk in chunks:
        if chunk.reset or chunk.start_offset != expected:
            result.violate(
                f"log chunk {chunk.start_offset}-{chunk.end_offset} follows byte {expected}"
                f"{' (reset)' if chunk.reset else ''}: a gap or an overlap"
            )
        expected = chunk.end_offset
