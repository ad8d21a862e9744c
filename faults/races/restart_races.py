"""A person's stop, start and apply racing a restart that waits out its back-off.

A job fails once and its policy schedules a restart BACKOFF_S later; while it waits, one of three
things happens, as a person would do it: a stop of the failed run, a start of the job by hand, or
an apply that sets `restart = "no"`. Each used to lose to the pending restart (a stop answered
`already_exited` and the job came back; a start ran beside the restart's copy; the apply was
ignored).

Checks, once the back-off's end has passed and the observer has looked three times more: after a
stop or an apply, no new run; after a start by hand, that run alone (never two live at once, no
`job_restarted` event); the failed run's note says why it was not restarted. A run the policy
started against the person's word is counted as duplicated. detection_s is the time from the
person's action to the note that says the restart is off.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent.operations.restarts import POLICY_NOW_NO
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from console.link.agent_link import AgentLink
from faults.harness.agents import local_agent
from faults.result import Scale, ScenarioResult
from tests.support.datasets import write_prompts
from tests.support.operations import events_of, jobs_now, jobs_where, local_link, observer_scans

TITLE = "A stop, a start by hand or an apply while a restart waits: the person wins"

BACKOFF_S = 2.0
"""Long enough for the person's action to land while the restart waits."""
RACES = ("stop", "start by hand", "apply restart = no")


def pipeline(workdir: Path, restart: str = "on-failure") -> PipelineConfig:
    """One job that fails the first time and stays up every time after."""
    root = workdir / "datasets"
    write_prompts(root / "D", 2)
    flag = workdir / "failed-once"
    code = (
        "import pathlib, sys, time; flag = pathlib.Path(sys.argv[1])\n"
        "if not flag.exists(): flag.touch(); sys.exit(1)\n"
        "print('up', flush=True); time.sleep(600)"
    )
    spec = JobSpec((sys.executable, "-c", code, str(flag)), restart=restart,  # type: ignore[arg-type]
                   restart_delay_s=BACKOFF_S, restart_window_s=600.0)  # fmt: skip
    return PipelineConfig(
        datasets=DatasetsConfig(str(root), low_disk_floor_bytes=2**62), jobs={"job": spec}
    )


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Each race, `trials` times, each on a fresh agent."""
    result = ScenarioResult("restart_races", TITLE, seed)
    trials = scale.pick(full=5, quick=1)
    for race in RACES:
        for trial in range(trials):
            folder = workdir / f"{race.split()[0]}-{trial}"
            async with local_agent(folder / "state", pipeline(folder)) as link:
                await _race(link, race, folder, result, f"{race} #{trial + 1}")
    result.notes.append(
        f"{trials} trial(s) of each race ({', '.join(RACES)}), back-off {BACKOFF_S:g} s"
    )
    return result


async def _race(
    link: AgentLink, race: str, folder: Path, result: ScenarioResult, name: str
) -> None:
    await link.call(JOBS_LAUNCH, LaunchParams("job"), idempotency_key="first")
    [waiting] = await jobs_where(
        link, lambda js: bool(js and (js[0].restart_note or "").startswith("restarting at"))
    )
    result.faults += 1
    result.attempted += 1
    acted = time.monotonic()
    mine = await _act(link, race, folder, waiting)
    expected_note = _note(race, mine)
    await jobs_where(
        link, lambda js: any(j.id == waiting.id and j.restart_note == expected_note for j in js)
    )
    result.detection_s.append(time.monotonic() - acted)
    jobs = await _past_the_back_off(link, waiting)
    wanted = {waiting.id, mine.id} if mine is not None else {waiting.id}
    extra = [j for j in jobs if j.id not in wanted]
    restarted = await events_of(link, "job_restarted")
    if extra or restarted:
        result.duplicated += len(extra)
        result.violate(f"{name}: the policy started {len(extra)} run(s) against the person's word")
        return
    result.acknowledged += 1


async def _act(link: AgentLink, race: str, folder: Path, waiting: JobInfo) -> JobInfo | None:
    if race == "stop":
        await link.call(JOBS_STOP, StopParams(waiting.id), idempotency_key="stop")
        return None
    if race == "start by hand":
        mine: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("job"), idempotency_key="mine")
        return mine
    async with local_link(folder / "state", pipeline(folder, restart="no")) as other:
        await other.apply_pipeline(pipeline(folder, restart="no"))
    return None


def _note(race: str, mine: JobInfo | None) -> str:
    if race == "stop":
        return "not restarted: a stop was asked for it while it waited to restart"
    if mine is not None:
        return f"not restarted: {mine.id} was started since"
    return POLICY_NOW_NO


async def _past_the_back_off(link: AgentLink, waiting: JobInfo) -> tuple[JobInfo, ...]:
    due = (waiting.ended_at or 0.0) + BACKOFF_S + 0.5
    while time.time() < due:
        await observer_scans(link, 1)
    await observer_scans(link, 3)
    return await jobs_now(link)
