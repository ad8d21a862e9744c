"""`k` and `R` over OpenSSH's sshd, 64 requests in flight, the machine loaded: the link stays up.

The console's own self-healing link (`HostConnection` over `open_ssh_link`) reaches the agent
through OpenSSH's sshd on loopback (and, in the full campaign, through the asyncssh server too).
The real runner generates with `--concurrency 64` against a simulator whose answers take about
ten seconds, so a stop's SIGINT starts a drain that outlasts the grace: the stop waits out the
whole grace, then SIGTERM cancels what is left. Two processes spin on the CPU throughout. Then
`k` (jobs.stop on the link) and `R` (the agent's redeploy, asked and followed on the same link),
while the console pings the agent every PING_EVERY_S on that link.

Checks: the link never leaves "up" from the first connect to the end (a drop counts, and is a
violation), every ping is answered, the stop sends SIGINT, waits out the whole grace (its
SIGTERM at least grace_s after its SIGINT, by the agent's own step times) and reports stopped;
the redeploy ends done with the old run recorded as stopped. Ping latency while the stops run
(p50 / p99 / max, against the goal p99 < 100 ms) is a figure in the notes, not a pass criterion.
Where sshd is not installed its half is skipped with a note.
"""

from __future__ import annotations

import getpass
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import JOBS_LAUNCH, JOBS_STOP, JobInfo, LaunchParams, StopParams, StopResult
from console.config import HostConfig, SshTarget
from console.link.agent_link import LinkError
from console.link.host_connection import HostConnection
from console.link.redeploy import follow_operation, start_redeploy
from faults.harness.agents import agent_cleanup
from faults.harness.box_runs import (
    RUNNER,
    Policy,
    RunShape,
    box_pipeline,
    line_of,
    live,
    runner_spec,
)
from faults.harness.link import (
    FIRST_CONNECT_S,
    LinkWatch,
    is_up,
    own_jobs,
    report_session_error,
    request_when_up,
    running_session,
)
from faults.harness.responses import write_prompts
from faults.links._loaded_link import Door, Pings, door, drops_after, spinning, why_not_up
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import status
from tests.support.simulator_process import running_simulator
from tests.support.ssh_servers import sshd_binary
from tests.support.waits import wait_until

TITLE = "k and R over sshd, 64 requests in flight, the machine loaded: the link stays up"

SIMULATOR_ARGS = ("--speed", "1", "--mean-tokens", "400", "--sd-tokens", "100",
                  "--per-request-rate", "40")  # fmt: skip
"""Answers of about ten seconds: a drain on SIGINT outlasts any grace here."""
SHAPE = RunShape(prompts=5000, budget=10_000_000, concurrency=64, max_new_tokens=1200)
POLICY = Policy(max_restarts=5, restart_window_s=600.0, restart_delay_s=1.0)
SPINNERS = 2
IN_FLIGHT_TIMEOUT_S = 60.0
CLOCK_SLACK_S = 0.01
"""How much earlier than the grace a SIGTERM may read, for rounding in the step times."""
DATASET = "B1_loaded"


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
            async with door(kind, workdir / kind / "ssh") as way_in, agent_cleanup(half.state):
                await half.play(way_in, scale.pick(3, 1))
            half.write_notes(kind)
    return result


@dataclass
class _Half:
    """One SSH server's half: the box, the console's link, the stops."""

    folder: Path
    url: str
    grace_s: float
    result: ScenarioResult
    pings: Pings = field(default_factory=Pings)
    stops_s: list[float] = field(default_factory=list)
    drops: int = 0

    @property
    def state(self) -> Path:
        """The agent's state folder."""
        return self.folder / "state"

    def host(self, way_in: Door) -> HostConfig:
        """The host through `way_in`: the runner at 64 in flight, stopped with SIGINT, a grace."""
        root = self.folder / "datasets"
        (root / DATASET).mkdir(parents=True, exist_ok=True)
        write_prompts(root / DATASET / "prompts.jsonl", SHAPE.prompts)
        jobs = {RUNNER: runner_spec(SHAPE, POLICY, grace_s=self.grace_s)}
        empty = self.folder / "ssh_config"
        empty.touch()
        return HostConfig(
            "faults", SshTarget("127.0.0.1", getpass.getuser(), way_in.port),
            python=sys.executable, state_dir=str(self.state),
            known_hosts=str(way_in.known_hosts), identity=str(way_in.identity),
            ssh_config=str(empty), pipeline=box_pipeline(root, SHAPE.budget, self.url, jobs),
        )  # fmt: skip

    async def play(self, way_in: Door, rounds: int) -> None:
        """Connect, load the machine, then k and R `rounds` times on the one link."""
        host, watch = self.host(way_in), LinkWatch()
        async with running_session(host, watch) as session:
            if not await wait_until(lambda: is_up(session), FIRST_CONNECT_S):
                self.result.violate(f"{way_in.kind}: the link never came up: {why_not_up(watch)}")
                return
            up_at = time.monotonic()
            with spinning(SPINNERS):
                for number in range(rounds):
                    await self._stop(session, f"{way_in.kind} k {number + 1}")
                    await self._redeploy(session, host, f"{way_in.kind} R {number + 1}")
        self._check_link(watch, up_at, way_in.kind)

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

        if not await wait_until(full, IN_FLIGHT_TIMEOUT_S):
            self.result.violate(f"{name}: the runner never had {SHAPE.concurrency} in flight")
            return None
        running = live(line_of(await own_jobs(session), RUNNER, DATASET))
        if len(running) != 1:
            self.result.violate(f"{name}: {len(running)} live runs before the stop, not 1")
            return None
        return running[0]

    async def _stop(self, session: HostConnection, name: str) -> None:
        """`k`: jobs.stop on the session's link, pinged throughout."""
        job = await self._running(session, name)
        if job is None or session.link is None:
            return
        self.result.attempted += 1
        started = time.monotonic()
        async with self.pings.during(session):
            try:
                stopped: StopResult = await session.link.call(
                    JOBS_STOP, StopParams(job.id), idempotency_key=name,
                    timeout_s=self.grace_s + 120,
                )  # fmt: skip
            except LinkError as exc:
                self.result.violate(f"{name}: the stop's answer was lost: {exc}")
                return
        self.result.faults += 1
        self.result.acknowledged += 1
        self.stops_s.append(time.monotonic() - started)
        self._check_stop(name, stopped)

    def _check_stop(self, name: str, stopped: StopResult) -> None:
        """SIGINT, the whole grace, SIGTERM; the job reads stopped."""
        steps = {step.action: step.at for step in stopped.steps}
        actions = [step.action for step in stopped.steps]
        if stopped.outcome != "stopped" or actions[:2] != ["SIGINT", "SIGTERM"]:
            self.result.violate(f"{name}: the stop went {actions}, {stopped.outcome}")
        elif (waited := steps["SIGTERM"] - steps["SIGINT"]) < self.grace_s - CLOCK_SLACK_S:
            self.result.violate(
                f"{name}: SIGTERM {waited:.2f} s after SIGINT, grace {self.grace_s}"
            )
        if stopped.job.state != "stopped":
            self.result.violate(f"{name}: the stopped run reads {stopped.job.state}")

    async def _redeploy(self, session: HostConnection, host: HostConfig, name: str) -> None:
        """`R`: asked once on the session's link and followed on it to the end."""
        job = await self._running(session, name)
        if job is None or session.link is None:
            return
        self.result.attempted += 1
        started = time.monotonic()
        async with self.pings.during(session):
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
        old = [j.state for j in await own_jobs(session) if j.id == job.id]
        if old != ["stopped"]:
            self.result.violate(f"{name}: the run the redeploy replaced reads {old}")

    def _check_link(self, watch: LinkWatch, since: float, kind: str) -> None:
        """Every time the link left "up" after it first came up is a drop; so is a lost ping."""
        self.drops, said = drops_after(watch, since)
        if self.drops:
            self.result.violate(f"{kind}: the link dropped {self.drops} time(s): {said}")
        if self.pings.unanswered:
            self.result.violate(
                f"{kind}: {len(self.pings.unanswered)} ping(s) went unanswered: "
                f"{sorted(set(self.pings.unanswered))[:3]}"
            )
        report_session_error(self.result, watch)

    def write_notes(self, kind: str) -> None:
        """Drops, ping latency while the stops ran, how long the stops took."""
        stops = ", ".join(f"{s:.1f}" for s in self.stops_s)
        self.result.notes.append(
            f"{kind}: {self.drops} link drops; while k and R ran: {self.pings.figures()}; k "
            f"took {stops} s (grace {self.grace_s:g} s, then SIGTERM); {SPINNERS} spinning "
            f"processes, {SHAPE.concurrency} requests in flight; recovery_s: R from asking to done"
        )
