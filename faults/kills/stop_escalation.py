"""Stop escalation: stubborn jobs with forked workers, and pid-reuse canaries.

Injects, through a real local agent: per trial a job that ignores SIGINT, SIGTERM, SIGHUP and
SIGUSR1 and forks 2-4 workers (one with a grandchild) that ignore them too, then `jobs.stop`; the
stop signal and both graces come from the seed. Some trials add a worker that leaves the group
with setsid(): the shim is a child subreaper and a stop signals its descendants outside the group
too, so such a worker must be gone after the stop like the rest (one that survives is a violation,
and is killed here). Canaries: a live process that records every catchable signal gets a job's
records pointed at its pid with another start time (a recycled pid), then that job is stopped.

Checks: the stop's steps are the plan's, SIGKILL is sent and the group seen empty at
grace (+ term grace) ± 1 s after the stop request, nothing of the job's group or session is left
(0 orphans), the outcome and the listed job say stopped by SIGKILL; a canary gets 0 signals,
stays alive, and its job is reported lost (or keeps the stop it already had), no step taken.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.host.procfs import all_pids, group_members, is_same_process, process_info, start_ticks
from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopResult,
    StopSignal,
)
from console.link.agent_link import AgentLink
from faults.harness.agents import job_states, local_agent, request_stop
from faults.kills._stop_canary import stop_with_canary
from faults.result import Scale, ScenarioResult
from tests.support.waits import wait_until

TITLE = "Stop escalation: a job that ignores SIGTERM and forks workers"

TOLERANCE_S = 1.0
READY_TIMEOUT_S = 20.0
STOP_SIGNALS: tuple[StopSignal, ...] = ("SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1")
STUBBORN_JOB = """
import os, signal, sys, time
for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(signum, signal.SIG_IGN)
ready, workers, escape = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def idle(kind):
    open(os.path.join(ready, "%s-%d" % (kind, os.getpid())), "w").close()
    while True:
        time.sleep(60)
for index in range(workers):
    if os.fork() == 0:
        if escape and index == 0:
            os.setsid()
            idle("escaped")
        if index == 1 and os.fork() == 0:
            idle("grandchild")
        idle("worker")
idle("job")
"""


@dataclass(frozen=True, slots=True)
class Trial:
    """One stubborn job and how it is configured to be stopped."""

    index: int
    stop_signal: StopSignal
    grace_s: float
    term_grace_s: float
    workers: int
    escape: bool
    canary_after: bool
    """Point the killed job's shim record at a canary afterwards and stop it again."""

    @property
    def job(self) -> str:
        """The job's name in the pipeline."""
        return f"stubborn-{self.index}"

    @property
    def expected_steps(self) -> list[str]:
        """The signals the plan sends, in order (it skips a second SIGTERM)."""
        return (
            [str(self.stop_signal)]
            + ([] if self.stop_signal == "SIGTERM" else ["SIGTERM"])
            + ["SIGKILL"]
        )

    @property
    def kill_after_s(self) -> float:
        """When SIGKILL is due, counted from the first signal."""
        return self.grace_s + (0.0 if self.stop_signal == "SIGTERM" else self.term_grace_s)

    @property
    def expected_marks(self) -> int:
        """Processes that announce themselves: job, workers, a grandchild from worker 1."""
        return 1 + self.workers + (1 if self.workers >= 2 else 0)


@dataclass(slots=True)
class Tally:
    """What the notes report across trials."""

    orphans: int = 0
    escaped: int = 0
    canary_signals: int = 0
    canaries: int = 0
    max_deviation_s: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)


def plan_trials(rng: random.Random, count: int) -> list[Trial]:
    """Signals, graces and worker counts from the seed; the first trial always has a canary."""
    return [
        Trial(
            index,
            rng.choice(STOP_SIGNALS),
            round(rng.uniform(0.5, 1.5), 2),
            round(rng.uniform(0.5, 1.5), 2),
            rng.randint(2, 4),
            rng.random() < 0.25,
            index == 0 or rng.random() < 0.25,
        )  # fmt: skip
        for index in range(count)
    ]


def build_pipeline(trials: list[Trial], folder: Path) -> PipelineConfig:
    """One job per trial (graces are per job spec), and a job that exits at once."""
    jobs = {
        trial.job: JobSpec(
            (
                sys.executable,
                "-c",
                STUBBORN_JOB,
                str(folder / trial.job),
                str(trial.workers),
                "1" if trial.escape else "0",
            ),
            stop_signal=trial.stop_signal,
            grace_s=trial.grace_s,
            term_grace_s=trial.term_grace_s,
        )  # fmt: skip
        for trial in trials
    }
    jobs["finished"] = JobSpec((sys.executable, "-c", "pass"))
    return PipelineConfig(jobs=jobs)


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Stop every stubborn job once, then stop jobs whose pids now belong to canaries."""
    result = ScenarioResult("stop_escalation", TITLE, seed)
    trials = plan_trials(random.Random(seed), scale.pick(20, 3))
    tally = Tally()
    async with local_agent(workdir / "state", build_pipeline(trials, workdir)) as link:
        for trial in trials:
            await stop_stubborn_job(link, trial, workdir, result, tally)
        for index in range(scale.pick(4, 1)):
            await stop_finished_job_with_recycled_pid(link, index, workdir, result, tally)
    _write_notes(result, tally, trials)
    return result


# ---------------------------------------------------------------- one stubborn job


Processes = tuple[tuple[int, int], ...]
"""(pid, start ticks) of each."""


@dataclass(frozen=True, slots=True)
class Started:
    """A stubborn job with every process it announced, as (pid, start ticks)."""

    job: JobInfo
    pgid: int
    members: Processes
    escaped: Processes


async def stop_stubborn_job(
    link: AgentLink, trial: Trial, workdir: Path, result: ScenarioResult, tally: Tally
) -> None:
    """Launch one stubborn job, stop it, and check timing, leftovers and the recorded outcome."""
    name = f"trial {trial.index} ({trial.stop_signal}, {trial.workers} workers)"
    started = await _start(link, trial, workdir, result, name)
    if started is None:
        return
    try:
        result.faults += 1
        stop_at = time.time()
        empty_at = asyncio.create_task(_group_empty_at(started.pgid, trial.kill_after_s + 10))
        stopped = await request_stop(link, started.job.id, f"stop-{trial.job}", result, name)
        seen_empty = await empty_at
        if stopped is not None:
            _check_timing(trial, stopped, stop_at, seen_empty, result, tally, name)
            await _check_outcome(link, stopped, result, tally, name)
        _check_leftovers(started, result, tally, name)
    finally:
        _kill_escaped(started, tally, result, name)
    if trial.canary_after:
        await _canary_stop(link, started.job, workdir, result, tally, name, finished=False)


async def _start(
    link: AgentLink, trial: Trial, workdir: Path, result: ScenarioResult, name: str
) -> Started | None:
    ready = workdir / trial.job
    ready.mkdir(parents=True)
    job: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams(trial.job), idempotency_key=f"launch-{trial.job}"
    )
    announced = await wait_until(
        lambda: len(list(ready.iterdir())) >= trial.expected_marks, READY_TIMEOUT_S
    )
    job = (await job_states(link))[job.id]
    members, escaped = _announced(ready)
    if not announced or job.pgid is None:
        result.violate(f"{name}: the job never started all its workers ({job.state})")
        _kill(escaped)  # the agent's cleanup kills the job's group, not a setsid() escapee
        return None
    return Started(job, job.pgid, members, escaped)


def _announced(ready: Path) -> tuple[Processes, Processes]:
    """The job's processes as they marked themselves: those in its group, and setsid() escapees."""
    members: list[tuple[int, int]] = []
    escaped: list[tuple[int, int]] = []
    for mark in ready.iterdir():
        pid = int(mark.name.rsplit("-", 1)[1])
        ticks = start_ticks(pid)
        if ticks is not None:
            (escaped if mark.name.startswith("escaped") else members).append((pid, ticks))
    return tuple(members), tuple(escaped)


async def _group_empty_at(pgid: int, timeout_s: float) -> float | None:
    """The wall-clock moment no live process is left in `pgid`, watched from outside."""

    async def empty() -> bool:
        return not await asyncio.to_thread(group_members, pgid)

    return time.time() if await wait_until(empty, timeout_s) else None


def _check_timing(
    trial: Trial, stopped: StopResult, stop_at: float, seen_empty: float | None,
    result: ScenarioResult, tally: Tally, name: str,
) -> None:  # fmt: skip
    actions = [step.action for step in stopped.steps]
    if actions != trial.expected_steps:
        result.violate(f"{name}: the stop sent {actions}, the plan is {trial.expected_steps}")
        return
    sent = stopped.steps[-1].at - stopped.steps[0].at
    if seen_empty is None:
        result.violate(f"{name}: the group was never seen empty after the stop")
        return
    landed = seen_empty - stop_at
    result.detection_s.append(landed)
    deviation = max(abs(sent - trial.kill_after_s), abs(landed - trial.kill_after_s))
    tally.max_deviation_s = max(tally.max_deviation_s, deviation)
    if deviation > TOLERANCE_S:
        result.violate(
            f"{name}: SIGKILL due {trial.kill_after_s:.2f} s after the stop, sent at "
            f"{sent:.2f} s, group empty at {landed:.2f} s (tolerance {TOLERANCE_S} s)"
        )


async def _check_outcome(
    link: AgentLink, stopped: StopResult, result: ScenarioResult, tally: Tally, name: str
) -> None:
    listed = (await job_states(link))[stopped.job.id]
    tally.outcomes[stopped.outcome] = tally.outcomes.get(stopped.outcome, 0) + 1
    for where, job in (("the stop result", stopped.job), ("jobs.list", listed)):
        if (job.state, job.exit_signal) != ("stopped", "SIGKILL"):
            result.violate(
                f"{name}: {where} says {job.state}/{job.exit_signal}, not stopped/SIGKILL"
            )
    if stopped.outcome != "stopped":
        result.violate(f"{name}: the stop's outcome is {stopped.outcome}, not stopped")


def _check_leftovers(started: Started, result: ScenarioResult, tally: Tally, name: str) -> None:
    survivors = {info.pid for info in group_members(started.pgid)}
    survivors |= {pid for pid, ticks in started.members if is_same_process(pid, ticks)}
    survivors |= set(_session_members(started.pgid))
    tally.orphans += len(survivors)
    if survivors:
        result.violate(f"{name}: {len(survivors)} process(es) of the job survived: {survivors}")


def _session_members(session: int) -> list[int]:
    """Live processes still in the job's session (the shim's), wherever their group went."""
    found = []
    for pid in all_pids():
        info = process_info(pid)
        try:
            if info is not None and info.alive and os.getsid(pid) == session:
                found.append(pid)
        except OSError:
            continue
    return found


def _kill_escaped(started: Started, tally: Tally, result: ScenarioResult, name: str) -> None:
    """A worker that left with setsid() must have been stopped with its job; kill a survivor."""
    survivors = _kill(started.escaped)
    tally.escaped += survivors
    if survivors:
        result.violate(f"{name}: {survivors} setsid() worker(s) outlived the stop (orphans)")


def _kill(processes: Processes) -> int:
    """SIGKILL each process that is still the one recorded; returns how many were alive."""
    alive = [pid for pid, ticks in processes if is_same_process(pid, ticks)]
    for pid in alive:
        kill_process(pid, signal.SIGKILL)
    return len(alive)


# ---------------------------------------------------------------- canaries


async def stop_finished_job_with_recycled_pid(
    link: AgentLink, index: int, workdir: Path, result: ScenarioResult, tally: Tally
) -> None:
    """A job that ended, whose pid (as its records say) now belongs to a canary."""
    job: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams("finished"), idempotency_key=f"finished-{index}"
    )

    async def ended() -> bool:
        return (await job_states(link))[job.id].state == "exited"

    if not await wait_until(ended, READY_TIMEOUT_S):
        result.violate(f"finished job {index}: never exited")
        return
    await _canary_stop(link, job, workdir, result, tally, f"finished job {index}", finished=True)


async def _canary_stop(
    link: AgentLink, job: JobInfo, workdir: Path, result: ScenarioResult, tally: Tally,
    name: str, *, finished: bool,
) -> None:  # fmt: skip
    result.faults += 1
    tally.canaries += 1
    folder = workdir / f"canary-{job.id}"
    tally.canary_signals += await stop_with_canary(
        link, job, folder, result, name, finished=finished
    )


def _write_notes(result: ScenarioResult, tally: Tally, trials: list[Trial]) -> None:
    result.notes += [
        f"orphans found: {tally.orphans}",
        f"canaries: {tally.canaries}, signals they received: {tally.canary_signals}",
        f"max |SIGKILL time - expected|: {tally.max_deviation_s:.2f} s",
        f"stop outcomes: {dict(sorted(tally.outcomes.items()))}",
        f"setsid() escapees in {sum(t.escape for t in trials)} trials: {tally.escaped} survived "
        "the stop (each would be a violation)",
    ]
