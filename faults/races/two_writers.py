"""Two writers on one dataset: runners started by hand, and launches raced through the agent.

By hand: while a real runner generates a dataset, a second runner is started on it again and
again (the first is frozen with SIGSTOP for each attempt, so anything on disk that changes is
the second one's doing). Through the agent: two or three consoles send `jobs.launch` for the same
dataset at the same moment, round after round, with the runner as the job, and once more while
a process started by hand holds the dataset's lock.

Checks: a second runner exits 4 within a few seconds, naming the first's pid and command line,
and leaves every file of the dataset as it was; each race starts exactly one job and refuses the
others with `dataset_busy` naming it; a launch against the hand-started writer is refused too;
after a last run each dataset holds every prompt exactly once, every line whole.
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent.datasets.writer_lock import LOCK_NAME
from agent.pipeline.inference.options import EXIT_LOCKED, EXIT_SIGNAL
from agent.protocol import (
    JOBS_LAUNCH,
    DatasetsConfig,
    ErrorCode,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from faults.harness.agents import job_states, local_agent, request_stop
from faults.harness.responses import read_final, write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import run_runner, start_runner, status
from tests.support.simulator_process import running_simulator
from tests.support.waits import wait_until, wait_until_blocking

TITLE = "Two writers on one dataset: by hand, and two consoles launching at once"

SIMULATOR_ARGS = ("--speed", "20", "--mean-tokens", "150", "--sd-tokens", "60")
PROMPTS = 600
PROMPTS_PER_ATTEMPT = 60
"""Enough that the first runner is still generating at the last attempt."""
LOCKED_EXIT_S = 60.0
"""A second runner must be gone within this: it exits before reading a prompt, where one that
waited for the lock would wait on the stopped first runner for ever. A bound that tells the two
apart, not a speed goal: its Python start took 10.2 s under six test workers on two cores (the
times are in the report's detection_s)."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(30, 4)` second runners by hand, `scale.pick(12, 3)` launch races."""
    result = ScenarioResult("two_writers", TITLE, seed)
    rng = random.Random(seed)
    with running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(seed)) as sim:
        await asyncio.to_thread(
            _by_hand, workdir / "hand" / "B1", sim.url, scale.pick(30, 4), rng, result
        )
        await _through_the_agent(workdir, sim.url, scale.pick(12, 3), rng, result)
    return result


# ------------------------------------------------------------------ by hand


def _by_hand(
    folder: Path, url: str, attempts: int, rng: random.Random, result: ScenarioResult
) -> None:
    folder.mkdir(parents=True)
    ids = write_prompts(folder / "prompts.jsonl", PROMPTS_PER_ATTEMPT * attempts)
    first = start_runner(folder, url, "--concurrency", "2")
    try:
        # the first runner holds the lock once it has said so
        wait_until_blocking(lambda: status(folder).get("pid") == first.pid, 30, 0.02)
        for attempt in range(attempts):
            time.sleep(rng.uniform(0.05, 0.4))
            if first.poll() is not None:
                result.violate(f"the first runner ended before attempt {attempt}: too few prompts")
                break
            _second_runner(folder, url, first, attempt, result)
        first.send_signal(signal.SIGINT)  # drain and exit; a last run finishes the dataset
        first.wait(timeout=120)
    finally:
        first.send_signal(signal.SIGCONT)
        first.kill()
        first.wait()
    if first.returncode not in (0, EXIT_SIGNAL):
        result.violate(f"the first runner exited {first.returncode}")
    last = run_runner(folder, url, "--concurrency", "64")
    if last.returncode != 0:
        result.violate(f"the last run exited {last.returncode}: {last.stderr[-300:]}")
    final = read_final(folder / "raw_responses.jsonl")
    _count_final(final.ids, final.corrupt_lines, ids, "by hand", result)
    result.notes.append(
        f"by hand: {attempts} second runners, each started while the first was frozen mid-run; "
        "detect_s is a second runner's whole life, interpreter start to exit 4 (it stops before "
        "reading a prompt); its files compared byte for byte before and after"
    )


def _second_runner(
    folder: Path, url: str, first: subprocess.Popen[str], attempt: int, result: ScenarioResult
) -> None:
    first.send_signal(signal.SIGSTOP)
    try:
        before = _files(folder)
        result.faults += 1
        started = time.monotonic()
        second = run_runner(folder, url, "--concurrency", "4")
        result.detection_s.append(time.monotonic() - started)
        said = second.stderr.strip().splitlines()[-1:] or ["nothing"]
        if second.returncode != EXIT_LOCKED or f"pid {first.pid} (" not in said[0]:
            result.violate(f"second runner {attempt}: exit {second.returncode}, said {said[0]!r}")
        elif time.monotonic() - started > LOCKED_EXIT_S:
            result.violate(f"second runner {attempt}: took {time.monotonic() - started:.1f} s")
        if _files(folder) != before:
            result.violate(f"second runner {attempt} changed the dataset's files")
    finally:
        first.send_signal(signal.SIGCONT)


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of the dataset but the lock and the runner's own log, byte for byte."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.name not in (LOCK_NAME, "runner.log")
    }


def _count_final(
    ids: dict[str, int], corrupt: int, prompts: list[str], where: str, result: ScenarioResult
) -> None:
    result.attempted += len(prompts)
    result.acknowledged += len(ids)
    result.duplicated += sum(count - 1 for count in ids.values())
    result.corrupt += corrupt
    missing = set(prompts) - set(ids)
    if missing:
        result.violate(f"{where}: {len(missing)} prompt(s) never answered")


# ------------------------------------------------------------------ through the agent


async def _through_the_agent(
    workdir: Path, url: str, rounds: int, rng: random.Random, result: ScenarioResult
) -> None:
    root, state = workdir / "agent" / "datasets", workdir / "agent" / "state"
    (root / "B2").mkdir(parents=True)
    ids = write_prompts(root / "B2" / "prompts.jsonl", PROMPTS)
    runner = JobSpec(
        (sys.executable, "-m", "agent.pipeline.inference", "--server", url, "--dataset-dir",
         "{dataset_dir}", "--concurrency", "4"),
        kind="inference", per_dataset=True, stop_signal="SIGINT", grace_s=10,
    )  # fmt: skip
    pipeline = PipelineConfig(datasets=DatasetsConfig(str(root)), jobs={"inference": runner})
    async with local_agent(state, pipeline) as link:
        for index in range(rounds):
            await _race(link, state, pipeline, index, rng, result)
        await _launch_against_a_hand_started_runner(link, root / "B2", url, result)
    final = read_final(root / "B2" / "raw_responses.jsonl")
    _count_final(final.ids, final.corrupt_lines, ids, "through the agent", result)
    result.notes.append(
        f"through the agent: {rounds} rounds of {2}-{3} consoles launching on one dataset at once "
        "(each its own attach and idempotency key), the real runner as the job; then one launch "
        "while a runner started by hand holds the lock"
    )


async def _race(
    link: AgentLink, state: Path, pipeline: PipelineConfig, index: int, rng: random.Random,
    result: ScenarioResult,
) -> None:  # fmt: skip
    consoles = [link] + [await open_local_link(state, pipeline) for _ in range(rng.randint(1, 2))]
    try:
        answers = await asyncio.gather(
            *(_launch(c, f"race-{index}-{n}") for n, c in enumerate(consoles)),
            return_exceptions=True,
        )
    finally:
        for console in consoles[1:]:
            await console.close()
    result.faults += len(consoles) - 1
    started = [a for a in answers if isinstance(a, JobInfo)]
    refused = [a for a in answers if isinstance(a, AgentRequestError)]
    if len(started) != 1 or len(refused) != len(consoles) - 1:
        result.violate(f"race {index}: {len(started)} job(s) started of {len(consoles)}: {answers}")
        return
    if not all(r.code == ErrorCode.DATASET_BUSY and started[0].id in r.detail for r in refused):
        result.violate(f"race {index}: a refusal does not name the job: {refused}")
    await _stop_when_running(link, started[0], f"race {index}", result)


async def _launch(link: AgentLink, key: str) -> JobInfo:
    info: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams("inference", "B2"), idempotency_key=key
    )
    return info


async def _stop_when_running(
    link: AgentLink, job: JobInfo, name: str, result: ScenarioResult
) -> None:
    async def running() -> bool:
        return (await job_states(link))[job.id].state == "running"

    if not await wait_until(running, 30):
        result.violate(f"{name}: the started job never ran")
    await asyncio.sleep(0.3)  # let it write a little
    await request_stop(link, job.id, f"stop-{job.id}", result, name)


async def _launch_against_a_hand_started_runner(
    link: AgentLink, folder: Path, url: str, result: ScenarioResult
) -> None:
    by_hand = start_runner(folder, url, "--concurrency", "4")
    try:
        await wait_until(lambda: _is_running(folder, by_hand.pid), 30)
        result.faults += 1
        try:
            job = await _launch(link, "against-hand")
        except AgentRequestError as refused:
            if f"pid {by_hand.pid} (" not in refused.detail:
                result.violate(f"the refusal does not name the runner started by hand: {refused}")
        else:
            result.violate(f"a launch beside a runner started by hand started job {job.id}")
        by_hand.send_signal(signal.SIGINT)
        await asyncio.to_thread(by_hand.wait, 120)
        last = await asyncio.to_thread(run_runner, folder, url, "--concurrency", "64")
        if last.returncode != 0:
            result.violate(f"the last run exited {last.returncode}: {last.stderr[-300:]}")
    finally:
        by_hand.kill()
        by_hand.wait()


async def _is_running(folder: Path, pid: int) -> bool:
    return status(folder).get("pid") == pid
