"""A reboot: every process of the box SIGKILLed at once, then the agent started with no console.

The box runs the SGLang simulator as the agent's server job and two real runners as its
per-dataset jobs, all under `restart = "on-failure"`. Mid-run the console leaves and the power
goes: every process of the box (the agent daemon, every job's shim and every job) is frozen with
SIGSTOP, so none sees another die and writes down what it saw, then SIGKILLed. Only the state
folder and the datasets are left. Then the command an `@reboot` line runs
(`agent.host.autostart.boot_command`: `python -m agent start --state-dir S` from the code link)
starts the agent through `/bin/sh`, and nothing else happens: no console attaches until the runs
are generating again by themselves.

Checks: every job that was running is found lost (its processes gone) and restarted once, in
its line (`restart_of`, a `job_restarted` event each); the runners resume by id and wait for
the restarted server; every acknowledged record is in the final files exactly once; each run
ends at its budget by the one done rule. recovery_s is the power cut to a new record in each
dataset; detection_s the power cut to the agent's restart of each job.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.host.autostart import boot_command
from agent.host.procfs import group_members, is_same_process, start_ticks
from agent.host.signals import kill_process
from agent.protocol import JobInfo, PipelineConfig
from agent.state import read_json
from console.link.agent_link import AgentLink
from faults.harness.agents import agent_cleanup, daemon_pid
from faults.harness.box_runs import (
    LOOK_S,
    RUNNER,
    SERVER,
    DatasetWatch,
    Kill,
    Policy,
    RunShape,
    check_restarts,
    count_final,
    error_lines,
    launch_box,
    line_of,
    runs_ended,
    runs_past,
    served_box,
)
from faults.result import Scale, ScenarioResult
from tests.support.operations import events_of, jobs_now, local_link
from tests.support.waits import wait_until

TITLE = "A reboot: every process of the box killed, the agent started with no console"

SIMULATOR_ARGS = ("--speed", "10", "--mean-tokens", "150", "--sd-tokens", "60")
POLICY = Policy(max_restarts=10, restart_window_s=600.0, restart_delay_s=0.2)
DATASETS = ("B1_reboot", "B2_reboot")
LINES = ((SERVER, None), (RUNNER, DATASETS[0]), (RUNNER, DATASETS[1]))
BOOT_TIMEOUT_S = 30.0
STEP_TIMEOUT_S = 60.0
FINISH_TIMEOUT_S = 180.0

Process = tuple[int, int]
"""(pid, start ticks)."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(5, 1)` reboots over two runs of `scale.pick(80_000, 25_000)` tokens."""
    result = ScenarioResult("reboot", TITLE, seed)
    shape = RunShape(scale.pick(3000, 1000), scale.pick(80_000, 25_000), 8, 600)
    simulator = (*SIMULATOR_ARGS, "--seed", str(seed))
    watches, pipeline = served_box(workdir, shape, DATASETS, simulator, POLICY)
    drill = _Drill(workdir / "state", watches, shape, random.Random(seed), result)
    async with agent_cleanup(drill.state):
        await drill.play(pipeline, scale.pick(5, 1))
    for watch in watches:
        count_final(result, watch, shape)
    drill.write_notes()
    return result


@dataclass
class _Drill:
    """The box's state folder, the datasets, the power cuts and what came of each."""

    state: Path
    watches: list[DatasetWatch]
    shape: RunShape
    rng: random.Random
    result: ScenarioResult
    kills: dict[tuple[str, str | None], list[Kill]] = field(default_factory=dict)
    boot_s: list[float] = field(default_factory=list)
    killed: int = 0

    async def play(self, pipeline: PipelineConfig, reboots: int) -> None:
        """Start the box, cut its power `reboots` times, let the runs finish, check the lines."""
        async with local_link(self.state, pipeline) as link:
            await launch_box(link, DATASETS)
        cut_at = 0.0
        for number in range(reboots):
            if not await self._generating(number, reboots, cut_at):
                return
            cut_at = await self._power_cut(number)
            if not await self._boot(number):
                return
        if await self._generating(reboots, reboots, cut_at):
            await self._check_with_a_console()

    async def _generating(self, number: int, reboots: int, since: float) -> bool:
        """Every run past its next share of the budget and generating since `since`."""
        tokens = self.shape.share(number, reboots)
        if not await runs_past(self.watches, tokens, since, STEP_TIMEOUT_S + BOOT_TIMEOUT_S):
            self.result.violate(f"after reboot {number}: the runs were not generating in time")
            return False
        if since:
            for watch in self.watches:
                self.result.recovery_s.append((watch.landed_after(since) or since) - since)
        return True

    async def _power_cut(self, number: int) -> float:
        """Freeze every process of the box, then SIGKILL them all; returns when it happened."""
        jobs = await asyncio.to_thread(_live_jobs, self.state)
        daemon = _daemon(self.state)
        processes = [daemon, *_group_processes(jobs)] if daemon else _group_processes(jobs)
        for signum in (signal.SIGSTOP, signal.SIGKILL):
            at, wall = time.monotonic(), time.time()
            for pid, _ in processes:
                with contextlib.suppress(ProcessLookupError):
                    kill_process(pid, signum)
        self.result.faults += 1
        self.killed += len(processes)
        await wait_until(
            lambda: not any(is_same_process(*p) for p in processes), STEP_TIMEOUT_S, LOOK_S
        )
        if survivors := [pid for pid, ticks in processes if is_same_process(pid, ticks)]:
            self.result.violate(f"power cut {number + 1}: processes {survivors} survived SIGKILL")
        for watch in self.watches:
            watch.look()
        gone = time.monotonic()
        for job in jobs:
            self.kills.setdefault((job.name, job.dataset), []).append(Kill(job, at, gone, wall))
        return gone

    async def _boot(self, number: int) -> bool:
        """What an @reboot line runs, through /bin/sh; it returns once the daemon is up."""
        started = time.monotonic()
        boot = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", boot_command(self.state), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            _, stderr = await asyncio.wait_for(boot.communicate(), BOOT_TIMEOUT_S)
        except TimeoutError:
            boot.kill()
            await boot.wait()
            self.result.violate(
                f"boot {number + 1}: the boot command took over {BOOT_TIMEOUT_S:g} s"
            )
            return False
        self.boot_s.append(time.monotonic() - started)
        if boot.returncode != 0 or _daemon(self.state) is None:
            said = stderr.decode(errors="replace").strip()
            self.result.violate(f"boot {number + 1}: exit {boot.returncode}, no daemon: {said}")
            return False
        return True

    async def _check_with_a_console(self) -> None:
        """A console comes back (no new config) once the runs went on by themselves."""
        async with local_link(self.state, None) as link:
            if await runs_ended(link, self.watches, FINISH_TIMEOUT_S, self.result):
                await self._check_lines(link)

    async def _check_lines(self, link: AgentLink) -> None:
        """Each line: lost and restarted once per power cut; the runners' last run exited 0."""
        jobs = await jobs_now(link)
        for name, dataset in LINES:
            line = line_of(jobs, name, dataset)
            check_restarts(self.result, line, self.kills.get((name, dataset), []), ("lost", None))
            if dataset is not None and (not line or line[-1].exit_code != 0):
                self.result.violate(f"{dataset}: the last run did not exit 0: {line[-1:]}")
            if dataset is not None and error_lines(self.watches[DATASETS.index(dataset)].folder):
                self.result.violate(f"{dataset}: prompts marked failed")
        restarted = await events_of(link, "job_restarted")
        expected = sum(len(kills) for kills in self.kills.values())
        if len(restarted) != expected:
            self.result.violate(f"{len(restarted)} job_restarted events, {expected} lost jobs")

    def write_notes(self) -> None:
        """What was killed, how the box came back, what the times measure."""
        boot = max(self.boot_s) if self.boot_s else float("nan")
        self.result.notes += [
            f"{self.result.faults} power cuts: {self.killed} processes frozen with SIGSTOP then "
            "SIGKILLed (the daemon, each job's shim and job); the boot command "
            f"(boot_command: python -m agent start) returned within {boot:.2f} s each time, and "
            "no console attached until the runs generated again",
            f"{POLICY.said}; 2 runs of {self.shape.budget:,} tokens behind the server job",
            "detection_s: power cut to the agent's restart of each lost job (its started_at); "
            "recovery_s: power cut to a new record, per dataset",
        ]


def _daemon(state: Path) -> Process | None:
    pid = daemon_pid(state) or 0
    ticks = start_ticks(pid) if pid else None
    return (pid, ticks) if ticks is not None else None


def _live_jobs(state: Path) -> list[JobInfo]:
    """The jobs whose shims run, read from their records (no console may ask the agent)."""
    found = []
    for shim_file in sorted(state.glob("jobs/*/shim.json")):
        shim, job = read_json(shim_file), read_json(shim_file.with_name("job.json"))
        if not isinstance(shim, dict) or not isinstance(job, dict):
            continue
        pid, ticks = int(shim["pid"]), int(shim["start_ticks"])
        if is_same_process(pid, ticks):
            found.append(JobInfo(shim_file.parent.name, str(job["name"]), str(job.get("kind")),
                                 "running", (), pgid=pid, dataset=job.get("dataset")))  # fmt: skip
    return found


def _group_processes(jobs: list[JobInfo]) -> list[Process]:
    """Every live process in the jobs' groups (each shim leads its job's group)."""
    return [
        (info.pid, info.start_ticks)
        for job in jobs
        for info in group_members(job.pgid or 0)
        if info.alive
    ]
