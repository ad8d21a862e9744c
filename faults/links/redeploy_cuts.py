"""The link cut, the console killed and the agent killed at every step of a redeploy.

A console asks the agent (over SSH, through a TCP relay that can reset it) to redeploy a running
per-dataset job: stop it (it ignores SIGINT, so the stop waits out its grace, then SIGTERM),
swap in two staged files (a script and a large file), start it again, watch it run. The agent's
operation record is polled every few milliseconds, and at the aimed phase (stop, deploy, start,
watch) one fault lands: the SSH connection reset by the relay (`cut`), the console process
running `eagle-console redeploy` SIGKILLed (`console`), or the agent daemon frozen at that
instant and SIGKILLed (`daemon`; the next attach starts one that resumes the operation). One
more aim kills the daemon between the job's death by SIGTERM and the stop being recorded.
Then a console reconnects and follows the operation (`follow_operation`) to its end.

Checks, after the box settles (nothing starting or stopping, no restart pending, three more
observer scans): the operation ended done or rolled_back, never failed; exactly one live job
of the line, running; its code (sha256 of its script when it started) is what is on disk; the
files on disk are all new (done) or all old (rolled back); its log says that version runs.
A run left stopped counts as lost, a second live job as duplicated, mixed files as corrupt.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path

from agent.host.signals import kill_process
from agent.protocol import JOBS_LAUNCH, JobInfo, LaunchParams, OperationInfo
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.redeploy import follow_operation, start_redeploy
from console.link.ssh_link import open_ssh_link
from faults.harness.agents import agent_cleanup, catch_stop_recording, daemon_pid
from faults.harness.box_runs import line_of, live, quiet_line
from faults.harness.link import loopback_server, pin_known_hosts
from faults.harness.relay import CuttableRelay
from faults.links._redeploy_box import (
    DATASET,
    JOB,
    Box,
    Caught,
    Version,
    catch_phase,
    caught_now,
    known_operations,
    on_disk,
    write_config,
    write_version,
)
from faults.result import Scale, ScenarioResult
from tests.support.operations import events_of, jobs_now
from tests.support.simulator_process import agent_env

TITLE = "Link cut, console killed, agent killed at every step of a redeploy"

AIMS = ("stop", "install", "start", "watch")
FAULTS = ("cut", "console", "daemon")
ESCALATION = "stop recording"
"""The aim of the daemon kill between the job's death by SIGTERM and its stop being recorded."""
QUICK_TRIALS = (("stop", "daemon"), ("install", "cut"), ("start", "console"), ("watch", "cut"))
BLOB_BYTES = (8 << 20, 2 << 20)
AIM_TIMEOUT_S = 60.0
END_TIMEOUT_S = 120.0

Trial = tuple[str, str]
"""(aim, fault)."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Every fault at every phase twice, plus 3 kills at the stop's recording (QUICK_TRIALS)."""
    result = ScenarioResult("redeploy_cuts", TITLE, seed)
    rng = random.Random(seed)
    trials = plan_trials(rng) if scale.full else list(QUICK_TRIALS)
    box = Box.at(workdir)
    async with loopback_server(workdir / "ssh") as server, agent_cleanup(box.state):
        relay = CuttableRelay(server.port)
        await relay.start()
        try:
            known = pin_known_hosts(server, relay.port, workdir / "relay_known_hosts")
            config = workdir / "eagle-console.toml"
            host = write_config(box, relay.port, server.identity, known, config)
            drill = _Drill(box, host, config, relay, rng, result, scale.pick(*BLOB_BYTES))
            await drill.set_up()
            for index, (aim, fault) in enumerate(trials):
                await drill.trial(f"trial {index + 1} ({fault} at {aim})", aim, fault)
            await drill.count_restart_attempts()
        finally:
            await relay.close()
    drill.write_notes()
    return result


def plan_trials(rng: random.Random) -> list[Trial]:
    """Every (aim, fault) twice and the daemon at the stop's recording 3 times, shuffled."""
    trials = [(aim, fault) for aim in AIMS for fault in FAULTS] * 2 + [(ESCALATION, "daemon")] * 3
    rng.shuffle(trials)
    return trials


class _Drill:
    """The box, the console's ways in, the trials and their tallies."""

    def __init__(
        self, box: Box, host: HostConfig, config: Path, relay: CuttableRelay,
        rng: random.Random, result: ScenarioResult, blob_bytes: int,
    ) -> None:  # fmt: skip
        self.box, self.host, self.config, self.relay = box, host, config, relay
        self.rng, self.result, self.blob_bytes = rng, result, blob_bytes
        self.current = Version(-1, "", "")
        self.landed: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.missed: list[str] = []

    async def set_up(self) -> None:
        """Version 0 on the box, the job running it (the first link uploads the agent)."""
        self.current = write_version(self.box.local, 0, self.blob_bytes, self.rng)
        for name in ("worker.py", "blob.bin"):
            (self.box.remote / name).write_bytes((self.box.local / name).read_bytes())
        link = await open_ssh_link(self.host)
        try:
            await link.call(JOBS_LAUNCH, LaunchParams(JOB, DATASET), idempotency_key="first")
        finally:
            await link.close()
        await self._settled("set-up", self.current)

    async def trial(self, name: str, aim: str, fault: str) -> None:
        """One redeploy, one fault at its aimed phase, a console following it to its end."""
        old = self.current
        new = write_version(self.box.local, old.number + 1, self.blob_bytes, self.rng)
        job = await self._running_job(name)
        if job is None:
            return
        self.result.attempted += 1
        known = known_operations(self.box.operations)
        injected = await self._inject(name, aim, fault, job, known)
        if injected is None:
            await self._after_a_failed_trial(name, known, old, new)
            return
        caught, fault_at = injected
        self.landed[f"{fault} at {caught.phase}"] += 1
        ended = await self._follow(name, caught.operation_id)
        if ended is not None:
            self.result.recovery_s.append(time.monotonic() - fault_at)
            self.outcomes[ended.state] += 1
            expected = new if ended.state == "done" else old
            await self._check(name, ended, expected, old, new)

    # ------------------------------------------------------------ the faults

    async def _inject(
        self, name: str, aim: str, fault: str, job: JobInfo, known: set[str]
    ) -> tuple[Caught, float] | None:
        """Ask for the redeploy the fault's way and land the fault; (what it hit, when)."""
        if fault == "console":
            return await self._kill_console(name, aim, known)
        link = await open_ssh_link(self.host)
        try:
            asked = asyncio.create_task(start_redeploy(link, self.host, job.id))
            if fault == "cut":
                caught = await self._cut(aim, known)
            else:
                caught = await self._kill_daemon(name, aim, job, known)
            fault_at = time.monotonic()
            await self._answered(asked)
        finally:
            await link.close()
        if caught is None:
            self.result.violate(f"{name}: the redeploy never reached {aim}")
            return None
        return caught, fault_at

    async def _cut(self, aim: str, known: set[str]) -> Caught | None:
        loop = asyncio.get_running_loop()
        caught = await asyncio.to_thread(
            catch_phase, self.box.operations, known, aim, AIM_TIMEOUT_S,
            lambda: _ignore(loop.call_soon_threadsafe(self._cut_now)),
        )  # fmt: skip
        await asyncio.sleep(0)  # the cut runs on this loop
        return caught

    def _cut_now(self) -> None:
        if self.relay.cut():
            self.result.faults += 1
        else:
            self.result.violate("a cut found no connection through the relay to cut")

    async def _kill_daemon(
        self, name: str, aim: str, job: JobInfo, known: set[str]
    ) -> Caught | None:
        """Freeze the daemon at the aimed moment, read where the redeploy stood, SIGKILL it."""
        pid = daemon_pid(self.box.state)
        if pid is None:
            return None
        freeze = lambda: kill_process(pid, signal.SIGSTOP)  # noqa: E731
        if aim == ESCALATION:
            window = await asyncio.to_thread(
                catch_stop_recording, job, self.box.state, AIM_TIMEOUT_S, freeze
            )
            if window != "in the window":
                self.missed.append(f"{name}: {window or 'the job never ended'}")
            caught = caught_now(self.box.operations, known)
        else:
            caught = await asyncio.to_thread(
                catch_phase, self.box.operations, known, aim, AIM_TIMEOUT_S, freeze
            )
        with contextlib.suppress(ProcessLookupError):
            kill_process(pid, signal.SIGKILL)
        self.result.faults += 1
        return caught

    async def _kill_console(
        self, name: str, aim: str, known: set[str]
    ) -> tuple[Caught, float] | None:
        """`eagle-console redeploy` in its own process, SIGKILLed at the aimed phase."""
        with (self.config.parent / "console.log").open("ab") as log:
            console = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "console", "--config", str(self.config), "redeploy",
                "faults", f"{JOB}/{DATASET}", stdin=asyncio.subprocess.DEVNULL, stdout=log,
                stderr=log, env=agent_env(),
            )  # fmt: skip
        try:
            caught = await asyncio.to_thread(
                catch_phase, self.box.operations, known, aim, AIM_TIMEOUT_S,
                lambda: _sigkill(console.pid),
            )  # fmt: skip
            fault_at = time.monotonic()
        finally:
            _sigkill(console.pid)
            code = await console.wait()
        if caught is None:
            self.result.violate(f"{name}: the console exited {code} before {aim} was reached")
            return None
        self.result.faults += 1  # whether it heard the answer, nobody can tell: not acknowledged
        return caught, fault_at

    async def _answered(self, asked: asyncio.Task[OperationInfo]) -> None:
        """Whether the console heard the agent's answer before the fault."""
        try:
            await asyncio.wait_for(asked, 30)
        except (LinkError, TimeoutError):
            return
        self.result.acknowledged += 1

    # ------------------------------------------------------------ after

    async def _after_a_failed_trial(
        self, name: str, known: set[str], old: Version, new: Version
    ) -> None:
        """Let a redeploy the trial did start end, so the next trial starts from a quiet box."""
        caught = caught_now(self.box.operations, known)
        if caught is not None:
            await self._follow(name, caught.operation_id)
        await self._settled(name, None)
        is_new = on_disk(self.box.remote) == (new.script_sha256, new.blob_sha256)
        self.current = new if is_new else old

    async def _follow(self, name: str, operation_id: str) -> OperationInfo | None:
        """A console reconnects and follows the operation to its end."""
        try:
            link = await self._reopen()
            try:
                return await asyncio.wait_for(
                    follow_operation(link, operation_id, lambda _: None, self._reopen),
                    END_TIMEOUT_S,
                )
            finally:
                await link.close()
        except (LinkError, TimeoutError) as exc:
            self.result.violate(f"{name}: the operation was not seen to end: {exc}")
            return None

    async def _reopen(self) -> AgentLink:
        deadline = time.monotonic() + END_TIMEOUT_S
        while True:
            try:
                return await open_ssh_link(self.host)
            except LinkError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    async def _check(
        self, name: str, ended: OperationInfo, expected: Version, old: Version, new: Version
    ) -> None:
        if ended.state not in ("done", "rolled_back"):
            self.result.violate(f"{name}: the redeploy ended {ended.state}: {ended.outcome}")
        running = await self._settled(name, expected)
        if running is not None and ended.state == "done" and ended.new_job_id != running.id:
            self.result.violate(f"{name}: done, but {running.id} runs, not {ended.new_job_id}")
        disk = on_disk(self.box.remote)
        known = {(v.script_sha256, v.blob_sha256): v for v in (old, new)}
        self.current = known.get(disk, expected)
        if disk not in known:
            self.result.corrupt += 1
            self.result.violate(f"{name}: the files on the box are a mix of old and new")

    async def _settled(self, name: str, expected: Version | None) -> JobInfo | None:
        """Once nothing starts, stops or waits to restart: the one running job, checked."""
        link = await self._reopen()
        try:
            line = await quiet_line(link, JOB, DATASET)
        finally:
            await link.close()
        running = live(line)
        if len(running) != 1:
            self.result.lost += not running
            self.result.duplicated += max(0, len(running) - 1)
            ids = [(job.id, job.state) for job in running]
            self.result.violate(f"{name}: {len(running)} live jobs of the line after it: {ids}")
            return None
        job = running[0]
        log = Path(job.log_path or "")
        said = log.read_text(errors="replace") if log.is_file() else ""
        if expected is None:
            return job
        if job.code_sha256 != expected.script_sha256 or expected.said not in said:
            self.result.violate(f"{name}: {job.id} does not run v{expected.number}: {said[-80:]!r}")
        return job

    async def _running_job(self, name: str) -> JobInfo | None:
        link = await self._reopen()
        try:
            running = live(line_of(await jobs_now(link), JOB, DATASET))
        finally:
            await link.close()
        if len(running) != 1:
            self.result.violate(f"{name}: {len(running)} live jobs before the redeploy")
            return None
        return running[0]

    async def count_restart_attempts(self) -> None:
        """A job a redeploy stopped is never restarted by its policy: not even tried."""
        link = await self._reopen()
        try:
            restarted = await events_of(link, "job_restarted")
            refused = await events_of(link, "restart_refused")
        finally:
            await link.close()
        if restarted:
            self.result.violate(f"the restart policy restarted a stopped job: {restarted[0]}")
        if refused:
            self.result.violate(
                f"the restart policy tried {len(refused)} time(s) to restart a job a redeploy "
                f"stopped; only the one-writer rule refused it: {refused[0]}"
            )

    def write_notes(self) -> None:
        """Where each fault landed, how the redeploys ended."""
        landed = ", ".join(f"{count} {where}" for where, count in sorted(self.landed.items()))
        outcomes = ", ".join(f"{count} {state}" for state, count in sorted(self.outcomes.items()))
        self.result.notes += [
            f"faults by the phase the agent's record was in when they landed: {landed}",
            f"redeploys ended: {outcomes}; acknowledged: the console heard the agent's answer "
            "before the fault (the record exists either way)",
            "recovery_s: the fault to the reconnected console seeing the operation's end",
        ]
        self.result.notes += [f"kill at the stop's recording missed: {m}" for m in self.missed]


def _sigkill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        kill_process(pid, signal.SIGKILL)


def _ignore(_: object) -> None:
    """Drop a value (a callback's handle) where a callable must return None."""
