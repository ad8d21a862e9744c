"""`k` and `R` over OpenSSH's sshd, 64 requests in flight, the machine loaded: the link stays up.

The console's own self-healing link (`HostConnection` over `open_ssh_link`) reaches the agent
through OpenSSH's sshd on loopback (and, in the full campaign, through the asyncssh server too).
The real runner generates with `--concurrency 64` against a simulator whose answers take about
ten seconds, so a stop's SIGINT starts a drain that outlasts the grace: the stop waits out the
whole grace, then SIGTERM cancels what is left. Two processes spin on the CPU throughout. Then
`k` (jobs.stop on the link) and `R` (the agent's redeploy, asked and followed on the same link),
while the console pings the agent every PING_EVERY_S on that link.

Checks: the link never leaves "up" from the first connect to the end (a drop counts, and is a
violation), every ping is answered, the stop waits out its grace and reports stopped, the
redeploy ends done. Where sshd is not installed its half is skipped with a note.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    PING,
    JobInfo,
    LaunchParams,
    PingParams,
    StopParams,
)
from console.config import HostConfig, SshTarget
from console.link.agent_link import LinkError
from console.link.host_connection import HostConnection
from console.link.redeploy import follow_operation, start_redeploy
from faults._box_runs import RUNNER, Policy, RunShape, box_pipeline, line_of, live, runner_spec
from faults._link_harness import (
    FIRST_CONNECT_S,
    LinkWatch,
    agent_cleanup,
    is_up,
    loopback_server,
    own_jobs,
    request_when_up,
    running_session,
    wait_for,
)
from faults._runner_kill_files import write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import status
from tests.support.simulator_process import running_simulator
from tests.support.ssh_servers import openssh_server, sshd_binary

TITLE = "k and R over sshd, 64 requests in flight, the machine loaded: the link stays up"

SIMULATOR_ARGS = ("--speed", "1", "--mean-tokens", "400", "--sd-tokens", "100",
                  "--per-request-rate", "40")  # fmt: skip
"""Answers of about ten seconds: a drain on SIGINT outlasts any grace here."""
SHAPE = RunShape(prompts=5000, budget=10_000_000, concurrency=64, max_new_tokens=1200)
POLICY = Policy(max_restarts=5, restart_window_s=600.0, restart_delay_s=1.0)
SPINNERS = 2
PING_EVERY_S = 0.2
IN_FLIGHT_TIMEOUT_S = 60.0
DATASET = "B1_loaded"


@dataclass(frozen=True, slots=True)
class Door:
    """How the console reaches one SSH server."""

    kind: str
    port: int
    identity: Path
    known_hosts: Path


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Each server's half: `scale.pick(3, 1)` rounds of k then R, with a grace of a few s."""
    result = ScenarioResult("loaded_stops", TITLE, seed)
    kinds = ["openssh"] if sshd_binary() else []
    if not kinds:
        result.notes.append("sshd is not installed here: its half was skipped (asyncssh only)")
    if scale.full or not kinds:
        kinds.insert(0, "asyncssh")
    grace_s = float(scale.pick(6, 3))
    with running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(seed)) as sim:
        for kind in kinds:
            half = _Half(workdir / kind, sim.url, grace_s, result)
            async with _door(kind, workdir / kind / "ssh") as door, agent_cleanup(half.state):
                await half.play(door, scale.pick(3, 1))
            half.write_notes(kind)
    return result


@contextlib.asynccontextmanager
async def _door(kind: str, folder: Path) -> AsyncIterator[Door]:
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
class _Half:
    """One SSH server's half: the box, the console's link, the stops."""

    folder: Path
    url: str
    grace_s: float
    result: ScenarioResult
    pings_ms: list[float] = field(default_factory=list)
    stops_s: list[float] = field(default_factory=list)
    unanswered: int = 0
    drops: int = 0

    @property
    def state(self) -> Path:
        """The agent's state folder."""
        return self.folder / "state"

    def host(self, door: Door) -> HostConfig:
        """The host through `door`: the runner at 64 in flight, stopped with SIGINT and a grace."""
        root = self.folder / "datasets"
        (root / DATASET).mkdir(parents=True, exist_ok=True)
        write_prompts(root / DATASET / "prompts.jsonl", SHAPE.prompts)
        jobs = {RUNNER: runner_spec(SHAPE, POLICY, grace_s=self.grace_s)}
        empty = self.folder / "ssh_config"
        empty.touch()
        return HostConfig(
            "faults", SshTarget("127.0.0.1", getpass.getuser(), door.port), python=sys.executable,
            state_dir=str(self.state), known_hosts=str(door.known_hosts),
            identity=str(door.identity), ssh_config=str(empty),
            pipeline=box_pipeline(root, SHAPE.budget, self.url, jobs),
        )  # fmt: skip

    async def play(self, door: Door, rounds: int) -> None:
        """Connect, load the machine, then k and R `rounds` times on the one link."""
        host, watch = self.host(door), LinkWatch()
        async with running_session(host, watch) as session:
            if not await wait_for(lambda: is_up(session), FIRST_CONNECT_S):
                self.result.violate(f"{door.kind}: the link never came up")
                return
            up_at = time.monotonic()
            with spinning(SPINNERS):
                for number in range(rounds):
                    await self._stop(session, f"{door.kind} k {number + 1}")
                    await self._redeploy(session, host, f"{door.kind} R {number + 1}")
            self._count_drops(watch, up_at, door.kind)

    async def _running(self, session: HostConnection, name: str) -> JobInfo | None:
        """The runner, launched if none runs, once its 64 requests are in flight."""
        running = live([j for j in await own_jobs(session) if j.dataset == DATASET])
        if not running:
            await request_when_up(
                session, JOBS_LAUNCH, LaunchParams(RUNNER, DATASET), key=f"{name}: launch"
            )
        folder = self.folder / "datasets" / DATASET

        def full() -> bool:
            return int(status(folder).get("in_flight", 0)) >= SHAPE.concurrency

        if not await wait_for(full, IN_FLIGHT_TIMEOUT_S):
            self.result.violate(f"{name}: the runner never had {SHAPE.concurrency} in flight")
            return None
        running = live(line_of(await own_jobs(session), RUNNER, DATASET))
        return running[0] if len(running) == 1 else None

    async def _stop(self, session: HostConnection, name: str) -> None:
        """`k`: jobs.stop on the session's link, pinged throughout."""
        job = await self._running(session, name)
        if job is None or session.link is None:
            return
        self.result.attempted += 1
        started = time.monotonic()
        async with self._pinging(session):
            try:
                stopped = await session.link.call(
                    JOBS_STOP,
                    StopParams(job.id),
                    idempotency_key=name,
                    timeout_s=self.grace_s + 120,
                )
            except LinkError as exc:
                self.result.violate(f"{name}: the stop's answer was lost: {exc}")
                return
        self.result.faults += 1
        self.result.acknowledged += 1
        self.stops_s.append(time.monotonic() - started)
        actions = [step.action for step in stopped.steps]
        if stopped.outcome != "stopped" or actions[:2] != ["SIGINT", "SIGTERM"]:
            self.result.violate(f"{name}: the stop went {actions}, {stopped.outcome}")

    async def _redeploy(self, session: HostConnection, host: HostConfig, name: str) -> None:
        """`R`: asked once on the session's link and followed on it to the end."""
        job = await self._running(session, name)
        if job is None or session.link is None:
            return
        self.result.attempted += 1
        started = time.monotonic()
        async with self._pinging(session):
            try:
                asked = await start_redeploy(session.link, host, job.id)
                ended = await follow_operation(session.link, asked.id, lambda _: None)
            except LinkError as exc:
                self.result.violate(f"{name}: the link failed under the redeploy: {exc}")
                return
        self.result.faults += 1
        self.result.acknowledged += 1
        self.result.recovery_s.append(time.monotonic() - started)
        if ended.state != "done":
            self.result.violate(f"{name}: the redeploy ended {ended.state}: {ended.outcome}")

    @contextlib.asynccontextmanager
    async def _pinging(self, session: HostConnection) -> AsyncIterator[None]:
        """Ping on the session's link every PING_EVERY_S while the block runs."""
        pinger = asyncio.create_task(self._ping(session))
        try:
            yield
        finally:
            pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pinger

    async def _ping(self, session: HostConnection) -> None:
        while True:
            link, sent = session.link, time.monotonic()
            try:
                if link is None:
                    raise LinkError("no link")
                await link.call(PING, PingParams(), timeout_s=30)
                self.pings_ms.append(1000 * (time.monotonic() - sent))
            except LinkError:
                self.unanswered += 1
            await asyncio.sleep(max(0.0, PING_EVERY_S - (time.monotonic() - sent)))

    def _count_drops(self, watch: LinkWatch, since: float, kind: str) -> None:
        """Every time the link left "up" after it first came up is a drop."""
        states = [state for at, state in watch.states if at >= since]
        self.drops = sum(
            before.status == "up" and after.status != "up"
            for before, after in zip(states, states[1:], strict=False)
        )
        if self.drops or self.unanswered:
            details = {state.detail for state in states if state.status != "up"}
            self.result.violate(
                f"{kind}: the link dropped {self.drops} time(s) ({details}) and "
                f"{self.unanswered} ping(s) went unanswered"
            )

    def write_notes(self, kind: str) -> None:
        """Drops, ping latency, how long the stops took."""
        pings = sorted(self.pings_ms) or [float("nan")]
        p99 = pings[min(len(pings) - 1, int(0.99 * len(pings)))]
        stops = ", ".join(f"{s:.1f}" for s in self.stops_s)
        self.result.notes.append(
            f"{kind}: {self.drops} link drops; {len(self.pings_ms)} pings during the stops, p50 "
            f"{statistics.median(pings):.0f} ms, p99 {p99:.0f} ms, max {pings[-1]:.0f} ms; k "
            f"took {stops} s (grace {self.grace_s:g} s, then SIGTERM); {SPINNERS} spinning "
            f"processes, {SHAPE.concurrency} requests in flight; recovery_s: R from asking to done"
        )
