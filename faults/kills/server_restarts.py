"""The SGLang server job SIGKILLed mid-run: the agent restarts it and the runs wait for it.

The simulator runs as the agent's own job of kind "server" on a fixed port, with `restart =
"on-failure"`; two real runners generate a dataset each through it, as the agent's per-dataset
jobs with the same policy. At points spread over the run the server's process is SIGKILLed:
every request in flight fails at once, and until the agent has started the server again (after
its restart delay, doubling with each restart) nothing answers on the port.

Checks: the server job is restarted once per kill (`restart_of`, a `job_restarted` event each),
the last one running; each runner says in its log that it paused dispatch and resumed it, and
is never restarted itself (one job per dataset, exit 0 at the end); nothing is marked failed
(no errors.jsonl line, no error counted in runner.json); every acknowledged record is in the
final files exactly once; each run ends at its budget by the one done rule. detection_s is the
kill to the agent's restart of the server; recovery_s the kill to a new record in each dataset.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import JobInfo
from console.link.agent_link import AgentLink
from faults.harness.agents import local_agent
from faults.harness.box_runs import (
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
    live,
    runs_ended,
    runs_past,
    served_box,
    sigkill,
    watch_until,
)
from faults.result import Scale, ScenarioResult
from tests.support.operations import events_of, jobs_now
from tests.support.runner_files import status

TITLE = "The SGLang server job SIGKILLed mid-run: restarted, the runs wait"

SIMULATOR_ARGS = ("--speed", "5", "--mean-tokens", "150", "--sd-tokens", "60")
"""About 2,000 tokens/s a run: the short campaign's 25,000 take some 12 s, so each kill lands
well inside both runs."""
POLICY = Policy(max_restarts=10, restart_window_s=600.0, restart_delay_s=0.2)
DATASETS = ("B1_server", "B2_server")
PAUSED = "dispatch to it paused"
RESUMED = "dispatch resumed"
STEP_TIMEOUT_S = 60.0
FINISH_TIMEOUT_S = 180.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(5, 2)` kills of the server over two runs of `scale.pick(80_000, 25_000)`."""
    result = ScenarioResult("server_restarts", TITLE, seed)
    shape = RunShape(scale.pick(3000, 1000), scale.pick(80_000, 25_000), 8, 600)
    simulator = (*SIMULATOR_ARGS, "--seed", str(seed))
    watches, pipeline = served_box(workdir, shape, DATASETS, simulator, POLICY)
    async with local_agent(workdir / "state", pipeline) as link:
        drill = _Drill(link, watches, shape, random.Random(seed), result)
        await drill.play(scale.pick(5, 2))
    for watch in watches:
        count_final(result, watch, shape)
    drill.write_notes()
    return result


@dataclass
class _Drill:
    """The server, the runs, the kills and what came of each."""

    link: AgentLink
    watches: list[DatasetWatch]
    shape: RunShape
    rng: random.Random
    result: ScenarioResult
    kills: list[Kill] = field(default_factory=list)
    pauses: dict[str, int] = field(default_factory=dict)
    missed: dict[str, int] = field(default_factory=dict)
    """Kills that came after a run had already ended at its budget, per dataset."""

    async def play(self, kills: int) -> None:
        """Start the server and the runs, kill the server `kills` times, let the runs finish."""
        await launch_box(self.link, DATASETS)
        for number in range(kills):
            server = await self._next_victim(number, kills)
            if server is None:
                return
            self.kills.append(await sigkill(server, self.watches))
            self.result.faults += 1
            await self._time_recovery(self.kills[-1])
        if await runs_ended(self.link, self.watches, FINISH_TIMEOUT_S, self.result):
            await self._check_lines()

    async def _next_victim(self, number: int, kills: int) -> JobInfo | None:
        """The running server, once both runs are past their next share and generating."""
        since = self.kills[-1].gone_at if self.kills else 0.0
        tokens = self.shape.share(number, kills)
        if not await runs_past(self.watches, tokens, since, STEP_TIMEOUT_S):
            self.result.violate(f"kill {number + 1}: the runs were not generating in time")
            return None
        running = live(line_of(await jobs_now(self.link), SERVER))
        if len(running) != 1 or running[0].state != "running" or running[0].pid is None:
            self.result.violate(f"kill {number + 1}: {len(running)} live servers, one expected")
            return None
        return running[0]

    async def _time_recovery(self, kill: Kill) -> None:
        """From the kill to a new record in every dataset whose run the kill caught.

        A run that had reached its budget and ended before the kill (a fast run, a slow look on
        a loaded machine: CI's did) has nothing to recover; it is counted as missed, not failed.
        """

        async def generating() -> bool:
            return all(w.landed_after(kill.gone_at) or _ended_before(w, kill) for w in self.watches)

        if not await watch_until(self.watches, generating, STEP_TIMEOUT_S):
            self.result.violate(f"the runs did not generate again within {STEP_TIMEOUT_S:g} s")
            return
        for watch in self.watches:
            landed = watch.landed_after(kill.gone_at)
            if landed is None:
                self.missed[watch.name] = self.missed.get(watch.name, 0) + 1
            else:
                self.result.recovery_s.append(landed - kill.at)

    async def _check_lines(self) -> None:
        """Server: one restart per kill, still up. Runners: one run each, exit 0, paused."""
        jobs = await jobs_now(self.link)
        servers = line_of(jobs, SERVER)
        check_restarts(self.result, servers, self.kills)
        if not servers or servers[-1].state != "running":
            self.result.violate(f"the server is not running at the end: {servers[-1:]}")
        for name in DATASETS:
            self._check_runner(name, line_of(jobs, RUNNER, name))
        restarted = await events_of(self.link, "job_restarted")
        if len(restarted) != len(self.kills):
            self.result.violate(
                f"{len(restarted)} job_restarted events for {len(self.kills)} kills"
            )

    def _check_runner(self, name: str, line: list[JobInfo]) -> None:
        if [(job.state, job.exit_code) for job in line] != [("exited", 0)]:
            runs = [(job.id, job.state, job.exit_code) for job in line]
            self.result.violate(f"{name}: runs {runs}, one that exited 0 expected")
        folder = self.watches[DATASETS.index(name)].folder
        marked, counted = error_lines(folder), status(folder).get("errors")
        if marked or counted:
            self.result.violate(f"{name}: {marked} prompt(s) marked failed, {counted} errors")
        log = Path(line[0].log_path or "") if line else None
        text = log.read_text(errors="replace") if log and log.is_file() else ""
        self.pauses[name] = text.count(PAUSED)
        caught = len(self.kills) - self.missed.get(name, 0)
        if text.count(PAUSED) < caught or text.count(RESUMED) < text.count(PAUSED):
            self.result.violate(
                f"{name}: its log paused dispatch {text.count(PAUSED)} times and resumed it "
                f"{text.count(RESUMED)} times for the {caught} server kills its run saw"
            )

    def write_notes(self) -> None:
        """The policy, the pauses, what the times measure."""
        pauses = ", ".join(f"{name} {count}" for name, count in self.pauses.items())
        self.result.notes += [
            f"server and runners: {POLICY.said}; {len(self.kills)} server kills over 2 runs of "
            f"{self.shape.budget:,} tokens each",
            f"the runners paused dispatch ({pauses}) and resumed it; none was restarted"
            + (f"; kills after a run had ended: {self.missed}" if self.missed else ""),
            "detection_s: kill to the agent's restart of the server (its started_at); "
            "recovery_s: kill to the next new record, per dataset",
        ]


def _ended_before(watch: DatasetWatch, kill: Kill) -> bool:
    """The dataset's run had ended (runner.json says stopped) with its last record before `kill`."""
    ended = status(watch.folder).get("state") == "stopped"
    return ended and watch.landed_after(kill.at) is None
