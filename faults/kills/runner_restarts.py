"""The runner SIGKILLed again and again under `restart = "on-failure"`: the agent brings it back.

The real runner (`python -m agent.pipeline.inference`) runs as the agent's per-dataset job
against the SGLang simulator, with a token budget and `--on-budget finish`. Nobody restarts it
by hand: at points spread over the run (a share of the budget generated, then a random moment
up to JITTER_S later, so kills land mid-append) its process is SIGKILLed, and the agent's
restart policy must start it again; the new runner resumes by id.

Checks: each kill is followed by exactly one restart (a new job of the line naming the killed
one in `restart_of`, a `job_restarted` event, never two live jobs of the line); every record
acknowledged (a complete line seen at any moment) is in the final file exactly once; no line is
corrupt; the run ends at its budget by the one done rule (`generation_done`), within one
response of it, the last runner exiting 0 with stop_reason "budget" and not restarted after.
recovery_s is the time from the kill to the first new record (generating again).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import JOBS_LAUNCH, JobInfo, LaunchParams
from console.link.agent_link import AgentLink
from faults.harness.agents import local_agent
from faults.harness.box_runs import (
    RUNNER,
    DatasetWatch,
    Kill,
    Policy,
    RunShape,
    box_pipeline,
    check_restarts,
    count_final,
    error_lines,
    line_of,
    live,
    runner_spec,
    runs_past,
    sigkill,
    watch_until,
)
from faults.result import Scale, ScenarioResult
from tests.support.operations import events_of, jobs_now
from tests.support.runner_files import status
from tests.support.simulator_process import running_simulator

TITLE = "Runner SIGKILLed again and again under restart = on-failure"

SIMULATOR_ARGS = ("--speed", "10", "--mean-tokens", "150", "--sd-tokens", "60")
"""About 5,000 tokens/s to 8 requests in flight: answers of 50-400 tokens in well under 1 s."""
POLICY = Policy(max_restarts=4, restart_window_s=4.0, restart_delay_s=0.2)
"""A short window: kills come every few seconds here, hours apart on a real box."""
JITTER_S = 0.3
STEP_TIMEOUT_S = 60.0
FINISH_TIMEOUT_S = 180.0
DATASET = "B1_restarts"


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(20, 3)` kills spread over a run of `scale.pick(160_000, 30_000)` tokens."""
    result = ScenarioResult("runner_restarts", TITLE, seed)
    kills = scale.pick(20, 3)
    shape = RunShape(scale.pick(4000, 1000), scale.pick(160_000, 30_000), 8, 600)
    root = workdir / "datasets"
    watch = DatasetWatch.create(root / DATASET, shape.prompts)
    with running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(seed)) as sim:
        pipeline = box_pipeline(root, shape.budget, sim.url, {RUNNER: runner_spec(shape, POLICY)})
        async with local_agent(workdir / "state", pipeline) as link:
            drill = _Drill(link, watch, shape, random.Random(seed), result)
            await drill.play(kills)
    landing = count_final(result, watch, shape)
    drill.write_notes(landing.overshoot, landing.largest)
    return result


@dataclass
class _Drill:
    """The run, its kills, and what the agent did about each."""

    link: AgentLink
    watch: DatasetWatch
    shape: RunShape
    rng: random.Random
    result: ScenarioResult
    kills: list[Kill] = field(default_factory=list)
    resumed_s: list[float] = field(default_factory=list)

    async def play(self, kills: int) -> None:
        """Launch once, kill `kills` times, wait for the run to end by itself, check the line."""
        await self.link.call(
            JOBS_LAUNCH, LaunchParams(RUNNER, DATASET), idempotency_key="runner-restarts"
        )
        for number in range(kills):
            victim = await self._next_victim(number, kills)
            if victim is None:
                return
            await asyncio.sleep(self.rng.uniform(0.0, JITTER_S))
            await self._kill(victim)
        if await self._finished():
            await self._check_line()

    async def _next_victim(self, number: int, kills: int) -> JobInfo | None:
        """Once the run is past its next share of the budget, generating again: the live runner."""
        since = self.kills[-1].gone_at if self.kills else 0.0
        tokens = self.shape.share(number, kills)
        if not await runs_past([self.watch], tokens, since, STEP_TIMEOUT_S):
            self.result.violate(f"kill {number + 1}: the run was not generating again in time")
            return None
        running = live(line_of(await jobs_now(self.link), RUNNER, DATASET))
        if len(running) != 1 or running[0].pid is None:
            self.result.violate(f"kill {number + 1}: {len(running)} live runners, one expected")
            return None
        return running[0]

    async def _kill(self, victim: JobInfo) -> None:
        self.kills.append(await sigkill(victim, [self.watch]))
        self.result.faults += 1
        await self._time_recovery(self.kills[-1])

    async def _time_recovery(self, kill: Kill) -> None:
        """From the kill to a new runner's runner.json, and to its first new record."""
        resumed: list[float] = []

        async def generating() -> bool:
            if not resumed and status(self.watch.folder).get("pid") not in (None, kill.job.pid):
                resumed.append(time.monotonic() - kill.at)
            return self.watch.landed_after(kill.gone_at) is not None

        if not await watch_until([self.watch], generating, STEP_TIMEOUT_S):
            self.result.violate(
                f"no new record within {STEP_TIMEOUT_S:g} s of killing {kill.job.id}"
            )
            return
        self.result.recovery_s.append((self.watch.landed_after(kill.gone_at) or 0.0) - kill.at)
        self.resumed_s += resumed

    async def _finished(self) -> bool:
        """The line's newest job exited by itself (at its budget), nothing live."""

        async def ended() -> bool:
            line = line_of(await jobs_now(self.link), RUNNER, DATASET)
            return bool(line) and line[-1].state == "exited" and not live(line)

        if not await watch_until([self.watch], ended, FINISH_TIMEOUT_S):
            line = line_of(await jobs_now(self.link), RUNNER, DATASET)
            said = f"{line[-1].state}, exit {line[-1].exit_code}" if line else "no job"
            self.result.violate(f"the run did not end by itself in {FINISH_TIMEOUT_S:g} s: {said}")
            return False
        return True

    async def _check_line(self) -> None:
        """One run per kill plus the first, each the restart of the one before; one event each."""
        line = line_of(await jobs_now(self.link), RUNNER, DATASET)
        check_restarts(self.result, line, self.kills)
        if line and line[-1].exit_code != 0:
            self.result.violate(f"the last run {line[-1].id} exited {line[-1].exit_code}, not 0")
        restarted = await events_of(self.link, "job_restarted")
        gave_up = await events_of(self.link, "restart_gave_up")
        if len(restarted) != len(self.kills) or gave_up:
            self.result.violate(
                f"{len(restarted)} job_restarted and {len(gave_up)} restart_gave_up events "
                f"for {len(self.kills)} kills"
            )
        if error_lines(self.watch.folder):
            self.result.violate(f"{error_lines(self.watch.folder)} prompt(s) marked failed")

    def write_notes(self, overshoot: int, largest: int) -> None:
        """The policy, the recovery breakdown, the landing, the torn tails repaired."""
        torn = self.watch.folder / "raw_responses.torn"
        self.result.repaired = len(torn.read_bytes().splitlines()) if torn.exists() else 0
        resumed = statistics.median(self.resumed_s) if self.resumed_s else float("nan")
        self.result.notes += [
            f"{POLICY.said}; {len(self.kills)} kills, each a random moment up to {JITTER_S:g} s "
            f"after the run passed its next share of the budget ({self.shape.budget:,} tokens, "
            f"{self.shape.concurrency} in flight)",
            "detection_s: kill to the restart's start (the agent's started_at: the end seen at "
            f"once, then the {POLICY.restart_delay_s:g} s delay doubling within the window); "
            f"recovery_s: kill to the first new record; the new runner's runner.json came "
            f"{resumed:.2f} s after the kill (p50), the rest is its first answers",
            f"budget: ended {overshoot:+,} tokens past {self.shape.budget:,} (longest response "
            f"{largest:,}, max_new_tokens {self.shape.max_new_tokens}); torn tails moved aside by "
            f"resumes: {self.result.repaired}",
        ]
