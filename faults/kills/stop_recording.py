"""The agent killed between a stop's SIGTERM and its record: the stop must stay a stop.

A job that ignores SIGINT is stopped (its stop signal, a short grace, then SIGTERM, which ends
it). The moment its shim has recorded the end (`exit.json`), and before the agent has written
the stop down (`stop.json`), the agent daemon is frozen and SIGKILLed; the next console starts a
new daemon. Two ways in: `k` (jobs.stop) on a per-dataset runner-like job (kind inference), and
`R` (operations.redeploy) on a server-like job (kind server, which no one-writer rule guards).
Both jobs carry `restart = "on-failure"`.

Checks, once the box is quiet (nothing starting, stopping or waiting to restart, three more
observer scans): a stop that was asked for is never undone by the restart policy (no job of the
line names the stopped one in `restart_of`, no restart attempted) and the new daemon lists the
job as stopped (not killed or lost); after `k` nothing of the line runs; after `R` exactly one
job of the line runs (a second one counts as duplicated).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    OPERATIONS_REDEPLOY,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    RedeployParams,
    StopParams,
)
from console.link.agent_link import LinkError
from faults.harness.agents import agent_cleanup, catch_stop_recording, daemon_pid
from faults.harness.box_runs import live, quiet_line
from faults.result import Scale, ScenarioResult
from tests.support.operations import events_of, local_link, operation_ended, text_appears
from tests.support.runner_files import write_id_prompts

TITLE = "The agent killed between a stop's SIGTERM and its record"

DEAF = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    time.sleep(1)\n"
)
RUNNER, SERVER, DATASET = "runner", "server", "D1"
AIM_TIMEOUT_S = 30.0


def pipeline(root: Path) -> PipelineConfig:
    """A runner-like job per dataset and a server-like job, both deaf to SIGINT, on-failure."""

    def deaf(kind: str, per_dataset: bool) -> JobSpec:
        return JobSpec(
            (sys.executable, "-c", DEAF), kind=kind, per_dataset=per_dataset,
            stop_signal="SIGINT", grace_s=0.5, term_grace_s=3.0, restart="on-failure",
            max_restarts=100, restart_delay_s=0.2,
        )  # fmt: skip

    return PipelineConfig(
        datasets=DatasetsConfig(str(root)),
        jobs={RUNNER: deaf("inference", True), SERVER: deaf("server", False)},
    )


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(5, 1)` stops (k) and as many redeploys (R), each with the agent killed."""
    result = ScenarioResult("stop_recording", TITLE, seed)
    write_id_prompts(workdir / "datasets" / DATASET, 2)
    drill = _Drill(workdir / "state", pipeline(workdir / "datasets"), result)
    async with agent_cleanup(drill.state):
        for index in range(scale.pick(5, 1)):
            await drill.stop_trial(index)
            await drill.redeploy_trial(index)
        await drill.count_attempts()
    return result


class _Drill:
    """The agent's state folder, its config, and the trials."""

    def __init__(self, state: Path, config: PipelineConfig, result: ScenarioResult) -> None:
        self.state, self.config, self.result = state, config, result
        self.missed = 0

    async def stop_trial(self, index: int) -> None:
        """`k` on the runner-like job, the agent killed before the stop is recorded."""
        job = await self._running(RUNNER, DATASET, f"k-{index}")
        async with local_link(self.state, self.config) as link:
            asked = asyncio.ensure_future(
                link.call(JOBS_STOP, StopParams(job.id), idempotency_key=f"stop-{index}")
            )
            await self._kill_in_the_window(job)
            with contextlib.suppress(LinkError):
                await asked
        line = await self._quiet(RUNNER, DATASET)
        self._check_not_undone(f"k {index + 1}", job, line, live_wanted=0)

    async def redeploy_trial(self, index: int) -> None:
        """`R` on the server-like job, the agent killed before its stop is recorded."""
        job = await self._running(SERVER, None, f"r-{index}")
        async with local_link(self.state, self.config) as link:
            asked = await link.call(
                OPERATIONS_REDEPLOY, RedeployParams(job.id), idempotency_key=f"redeploy-{index}"
            )
            await self._kill_in_the_window(job)
        async with local_link(self.state, self.config) as link:
            ended = await operation_ended(link, asked.id)
        if ended.state != "done":
            self.result.violate(f"R {index + 1}: the redeploy ended {ended.state}: {ended.outcome}")
        line = await self._quiet(SERVER, None)
        self._check_not_undone(f"R {index + 1}", job, line, live_wanted=1)

    async def _running(self, name: str, dataset: str | None, key: str) -> JobInfo:
        async with local_link(self.state, self.config) as link:
            running = live(await quiet_line(link, name, dataset))
            if running:
                return running[0]
            job: JobInfo = await link.call(
                JOBS_LAUNCH, LaunchParams(name, dataset), idempotency_key=key
            )
            await text_appears(Path(job.log_path or ""), "ready")
            return job

    async def _kill_in_the_window(self, job: JobInfo) -> None:
        pid = daemon_pid(self.state)
        if pid is None:
            self.result.violate("no daemon to kill")
            return
        window = await asyncio.to_thread(
            catch_stop_recording, job, self.state, AIM_TIMEOUT_S,
            lambda: kill_process(pid, signal.SIGSTOP),
        )  # fmt: skip
        with contextlib.suppress(ProcessLookupError):
            kill_process(pid, signal.SIGKILL)
        if window == "in the window":
            self.result.faults += 1
        else:
            self.missed += 1
            self.result.notes.append(f"a kill missed the window: {window or 'no end seen'}")

    async def _quiet(self, name: str, dataset: str | None) -> list[JobInfo]:
        async with local_link(self.state, self.config) as link:
            return await quiet_line(link, name, dataset)

    def _check_not_undone(
        self, trial: str, stopped: JobInfo, line: list[JobInfo], live_wanted: int
    ) -> None:
        self.result.attempted += 1
        by_policy = [job.id for job in line if job.restart_of == stopped.id]
        running = live(line)
        if by_policy:
            self.result.violate(
                f"{trial}: the restart policy restarted {stopped.id}, stopped on request, as "
                f"{by_policy}; the agent lists it as {_state_of(stopped.id, line)}"
            )
        if len(running) != live_wanted:
            self.result.duplicated += max(0, len(running) - live_wanted)
            self.result.violate(
                f"{trial}: {len(running)} live jobs of the line, {live_wanted} wanted"
            )
        if (now := _state_of(stopped.id, line)) != "stopped":
            self.result.violate(f"{trial}: {stopped.id}, stopped on request, reads {now}")
        if not by_policy and len(running) == live_wanted and now == "stopped":
            self.result.acknowledged += 1

    async def count_attempts(self) -> None:
        """Restarts the policy attempted and was refused are attempts to undo a stop too."""
        async with local_link(self.state, self.config) as link:
            refused = await events_of(link, "restart_refused")
        if refused:
            self.result.violate(f"{len(refused)} restart(s) of a stopped job refused: {refused[0]}")
        self.result.notes.append(
            "each trial freezes the daemon once the job's exit.json exists and before its "
            "stop.json records the stop's end (it says `asked` from the first signal on; the "
            f"window was missed {self.missed} time(s)), then SIGKILLs it"
        )


def _state_of(job_id: str, line: list[JobInfo]) -> str:
    return next((job.state for job in line if job.id == job_id), "gone")
