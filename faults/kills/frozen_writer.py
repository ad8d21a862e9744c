"""A writer frozen with SIGSTOP: still the writer, shown stalled, whoever started it.

Two real runners generate two datasets under a real agent: one started by hand, one launched as
the agent's job. Trial after trial one of them is frozen with SIGSTOP at a random moment, held,
and woken with SIGCONT; one freeze of the hand-started runner outlasts its runner.json's
freshness (15 s), the case that used to read as idle: nothing fresh says a run is alive, only
the lock it still holds.

Checks: while frozen, the agent's snapshot shows the dataset stalled with the frozen pid as its
writer (detect: from SIGSTOP to that snapshot) and a launch on it is refused naming that pid;
after SIGCONT it is running again (recover: from SIGCONT). A last run finishes both datasets,
each prompt exactly once.
"""

from __future__ import annotations

import asyncio
import random
import signal
import sys
import time
from pathlib import Path

from agent.datasets.runner_status import FRESH_S
from agent.host.procfs import process_info
from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT,
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from console.link.agent_link import AgentLink, AgentRequestError
from faults.harness.agents import job_states, local_agent, request_stop
from faults.harness.responses import read_final, write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import run_runner, start_runner, status
from tests.support.simulator_process import running_simulator
from tests.support.waits import wait_until

TITLE = "A writer frozen with SIGSTOP, by hand or as the agent's job"

SIMULATOR_ARGS = ("--speed", "10", "--mean-tokens", "150", "--sd-tokens", "60")
PROMPTS_PER_S = 25
"""About twice what one runner (concurrency 2) answers per second here: it never runs out."""
SEE_TIMEOUT_S = 10.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(20, 4)` freezes, alternating writers, one held past runner.json's freshness."""
    result = ScenarioResult("frozen_writer", TITLE, seed)
    rng = random.Random(seed)
    root = workdir / "datasets"
    freezes = scale.pick(20, 4)
    prompts = round(PROMPTS_PER_S * (FRESH_S + 10 + 2 * freezes))
    ids = {
        name: write_prompts(_folder(root, name) / "prompts.jsonl", prompts) for name in ("B1", "B2")
    }
    with running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(seed)) as sim:
        runner = JobSpec(
            (sys.executable, "-m", "agent.pipeline.inference", "--server", sim.url,
             "--dataset-dir", "{dataset_dir}", "--concurrency", "2"),
            kind="inference", per_dataset=True, stop_signal="SIGINT", grace_s=10,
        )  # fmt: skip
        pipeline = PipelineConfig(datasets=DatasetsConfig(str(root)), jobs={"inference": runner})
        by_hand = start_runner(_folder(root, "B1"), sim.url, "--concurrency", "2")
        try:
            async with local_agent(workdir / "state", pipeline) as link:
                job = await _start_job(link, result)
                if job is not None:
                    await _freezes(link, root, by_hand.pid, job, freezes, rng, result)
                    await request_stop(link, job.id, "stop-job", result, "the agent's runner")
        finally:
            by_hand.send_signal(signal.SIGCONT)
            by_hand.send_signal(signal.SIGINT)
            await asyncio.to_thread(by_hand.wait, 120)
        await asyncio.to_thread(_finish, root, sim.url, ids, result)
    return result


def _folder(root: Path, name: str) -> Path:
    (root / name).mkdir(parents=True, exist_ok=True)
    return root / name


async def _start_job(link: AgentLink, result: ScenarioResult) -> JobInfo | None:
    job: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams("inference", "B2"), idempotency_key="frozen-b2"
    )

    async def running() -> bool:
        nonlocal job
        job = (await job_states(link))[job.id]
        return job.state == "running" and job.pid is not None

    if not await wait_until(running, 30):
        result.violate(f"the agent's runner never ran: {job}")
        return None
    return job


async def _freezes(
    link: AgentLink, root: Path, hand_pid: int, job: JobInfo, count: int, rng: random.Random,
    result: ScenarioResult,
) -> None:  # fmt: skip
    assert job.pid is not None
    await wait_until(lambda: _said_running(root / "B1", hand_pid), 30)
    writers = (("B1", hand_pid, "by hand"), ("B2", job.pid, "agent job"))
    for trial in range(count):
        name, pid, who = writers[trial % 2]
        hold_s = FRESH_S + 1 if trial == 0 else rng.uniform(0.2, 1.0)
        await asyncio.sleep(rng.uniform(0.1, 0.6))
        await _freeze_once(link, name, pid, hold_s, f"trial {trial} ({who}, pid {pid})", result)
    result.notes.append(
        f"{count} freezes alternating between a runner started by hand (B1) and the agent's job "
        f"(B2); trial 0 held {FRESH_S + 1:.0f} s, past runner.json's {FRESH_S:.0f} s freshness"
    )


async def _freeze_once(
    link: AgentLink, name: str, pid: int, hold_s: float, trial: str, result: ScenarioResult
) -> None:
    kill_process(pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    result.faults += 1
    try:
        if not await _see(link, name, lambda d: d.status == "stalled" and d.writer_pid == pid):
            result.violate(f"{trial}: never shown stalled: {await _progress(link, name)}")
        else:
            result.detection_s.append(time.monotonic() - frozen_at)
        await asyncio.sleep(max(0.0, frozen_at + hold_s - time.monotonic()))
        if (await _progress(link, name)).status != "stalled":
            result.violate(f"{trial}: no longer stalled after {hold_s:.1f} s frozen")
        await _launch_is_refused(link, name, pid, trial, result)
    finally:
        kill_process(pid, signal.SIGCONT)
    woken_at = time.monotonic()
    if await _see(link, name, lambda d: d.status == "running" and not d.writer_stopped):
        result.recovery_s.append(time.monotonic() - woken_at)
    else:
        result.violate(f"{trial}: not running again after SIGCONT: {await _progress(link, name)}")


async def _launch_is_refused(
    link: AgentLink, name: str, pid: int, trial: str, result: ScenarioResult
) -> None:
    result.attempted += 1
    try:
        job = await link.call(
            JOBS_LAUNCH, LaunchParams("inference", name), idempotency_key=f"{trial}-{name}"
        )
    except AgentRequestError as refused:
        if f"pid {pid} (" in refused.detail and "stopped (SIGSTOP)" in refused.detail:
            result.acknowledged += 1
        else:
            result.violate(f"{trial}: the refusal does not name the frozen writer: {refused}")
        return
    result.violate(f"{trial}: a launch beside the frozen writer started {job}")


async def _see(link: AgentLink, name: str, check: object) -> bool:
    async def seen() -> bool:
        return bool(check(await _progress(link, name)))  # type: ignore[operator]

    return await wait_until(seen, SEE_TIMEOUT_S)


async def _progress(link: AgentLink, name: str) -> DatasetProgress:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    return next(d for d in snapshot.datasets if d.name == name)


async def _said_running(folder: Path, pid: int) -> bool:
    info = process_info(pid)
    return info is not None and status(folder).get("pid") == pid


def _finish(root: Path, url: str, ids: dict[str, list[str]], result: ScenarioResult) -> None:
    for name, prompts in ids.items():
        last = run_runner(root / name, url, "--concurrency", "128")
        if last.returncode != 0:
            result.violate(f"{name}: the last run exited {last.returncode}: {last.stderr[-300:]}")
        final = read_final(root / name / "raw_responses.jsonl")
        result.duplicated += sum(count - 1 for count in final.ids.values())
        result.corrupt += final.corrupt_lines
        if set(final.ids) != set(prompts):
            result.violate(f"{name}: {len(set(prompts) - set(final.ids))} prompt(s) missing")
