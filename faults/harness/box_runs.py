"""Shared parts of the scenarios in which the box carries the run by itself.

The real runner as the agent's per-dataset job, the simulator beside it or as the agent's own
server job, each under `restart = "on-failure"`; each dataset's responses file followed by byte
offset while the faults land (every complete line seen is a record the runner acknowledged);
and the final count: lost, duplicated, corrupt, and the budget met by the one done rule.
Nothing here injects a fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.host.procfs import is_same_process, start_ticks
from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    LIVE_JOB_STATES,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    generation_done,
)
from console.link.agent_link import AgentLink
from faults.harness.responses import ResponsesFollower, read_final, write_prompts
from faults.result import ScenarioResult
from tests.support.operations import jobs_now, observer_scans
from tests.support.ports import free_port
from tests.support.runner_files import status
from tests.support.waits import wait_until

RUNNER = "inference"
SERVER = "sglang"
SETTLE_TIMEOUT_S = 60.0
LOOK_S = 0.03
"""How often the responses files are looked at while faults land."""
GONE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class RunShape:
    """How big a dataset's run is, and how the runner runs it."""

    prompts: int
    budget: int
    concurrency: int
    max_new_tokens: int

    def share(self, number: int, faults: int) -> float:
        """The tokens a run is past before fault `number` lands: faults spread over the budget."""
        return self.budget * (number + 1) / (faults + 2)


@dataclass(frozen=True, slots=True)
class Policy:
    """A job's restart policy, as `[hosts.X.jobs.Y]` would set it."""

    max_restarts: int
    restart_window_s: float
    restart_delay_s: float

    @property
    def said(self) -> str:
        """The policy in the words of the scenarios' notes."""
        return (
            f"restart on-failure, delay {self.restart_delay_s:g} s doubling, at most "
            f"{self.max_restarts} in {self.restart_window_s:g} s"
        )


def runner_spec(shape: RunShape, policy: Policy, grace_s: float = 20.0) -> JobSpec:
    """The real runner on `{dataset_dir}` to `{budget}`, finishing what is in flight at the end."""
    argv = (
        "{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}",
        "--dataset-dir", "{dataset_dir}", "--token-budget", "{budget}",
        "--concurrency", str(shape.concurrency), "--max-new-tokens", str(shape.max_new_tokens),
        "--on-budget", "finish", "--progress-interval", "1",
    )  # fmt: skip
    return JobSpec(
        argv, kind="inference", per_dataset=True, stop_signal="SIGINT", grace_s=grace_s,
        restart="on-failure", max_restarts=policy.max_restarts,
        restart_window_s=policy.restart_window_s, restart_delay_s=policy.restart_delay_s,
    )  # fmt: skip


def server_spec(port: int, log_file: Path, args: tuple[str, ...], policy: Policy) -> JobSpec:
    """The SGLang simulator as the agent's server job on a fixed port (the runners' --server)."""
    argv = (
        "{python}", "-m", "agent.simulator", "--port", str(port), "--log-file", str(log_file),
        *args,
    )  # fmt: skip
    return JobSpec(
        argv, kind="server", grace_s=5.0, term_grace_s=2.0, restart="on-failure",
        max_restarts=policy.max_restarts, restart_window_s=policy.restart_window_s,
        restart_delay_s=policy.restart_delay_s,
    )  # fmt: skip


def box_pipeline(
    root: Path, budget: int, url: str, jobs: dict[str, JobSpec], log: Path | None = None
) -> PipelineConfig:
    """The host config the agent is given: the datasets under `root`, one budget, the jobs."""
    return PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=budget, low_disk_floor_bytes=0),
        sglang_url=url, sglang_log=str(log) if log else None, jobs=jobs,
    )  # fmt: skip


def served_box(
    workdir: Path,
    shape: RunShape,
    datasets: tuple[str, ...],
    simulator: tuple[str, ...],
    policy: Policy,
) -> tuple[list[DatasetWatch], PipelineConfig]:
    """The datasets followed, and a box whose server and runners are all the agent's jobs."""
    root, port = workdir / "datasets", free_port()
    watches = [DatasetWatch.create(root / name, shape.prompts) for name in datasets]
    server = server_spec(port, workdir / "sglang.log", simulator, policy)
    jobs = {SERVER: server, RUNNER: runner_spec(shape, policy)}
    return watches, box_pipeline(root, shape.budget, f"http://127.0.0.1:{port}", jobs)


async def launch_box(link: AgentLink, datasets: tuple[str, ...]) -> None:
    """Launch the server job, then a runner for each dataset."""
    await link.call(JOBS_LAUNCH, LaunchParams(SERVER), idempotency_key="server")
    for name in datasets:
        await link.call(JOBS_LAUNCH, LaunchParams(RUNNER, name), idempotency_key=name)


# ---------------------------------------------------------------- the datasets, followed


@dataclass
class DatasetWatch:
    """One dataset's responses file, followed by byte offset while the faults land."""

    folder: Path
    prompt_ids: list[str]
    follower: ResponsesFollower
    acknowledged: set[str] = field(default_factory=set)
    bad_offsets: list[int] = field(default_factory=list)
    landed: list[float] = field(default_factory=list)
    """Monotonic times of the looks that found new complete records."""

    @classmethod
    def create(cls, folder: Path, prompts: int) -> DatasetWatch:
        """Write the dataset's prompts and follow its responses file from the start."""
        folder.mkdir(parents=True, exist_ok=True)
        ids = write_prompts(folder / "prompts.jsonl", prompts)
        return cls(folder, ids, ResponsesFollower(folder / "raw_responses.jsonl"))

    @property
    def name(self) -> str:
        """The dataset's name (its folder's)."""
        return self.folder.name

    def look(self) -> int:
        """Read the complete lines appended since the last look; returns how many."""
        seen = self.follower.observe()
        self.acknowledged.update(seen.new_ids)
        self.bad_offsets += seen.bad_offsets
        if seen.new_ids:
            self.landed.append(time.monotonic())
        return len(seen.new_ids)

    def landed_after(self, since: float) -> float | None:
        """When the first look after `since` found a new record."""
        return next((at for at in self.landed if at > since), None)

    def records(self) -> int:
        """Complete records seen so far."""
        return len(self.follower.sizes)


async def watch_until(
    watches: list[DatasetWatch], done: Callable[[], Awaitable[bool]], timeout_s: float
) -> bool:
    """Look at every dataset every LOOK_S until `done` holds (True) or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        for watch in watches:
            watch.look()
        if await done():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(LOOK_S)


async def runs_past(
    watches: list[DatasetWatch], tokens: float, since: float, timeout_s: float
) -> bool:
    """Every run has generated `tokens` and written a record after `since` (False: timed out)."""

    async def ready() -> bool:
        return all(
            status(w.folder).get("tokens", 0) >= tokens and w.landed_after(since) is not None
            for w in watches
        )

    return await watch_until(watches, ready, timeout_s)


async def runs_ended(
    link: AgentLink, watches: list[DatasetWatch], timeout_s: float, result: ScenarioResult
) -> bool:
    """Every dataset's runner line ended by itself, nothing of it live; else a violation."""

    async def ended() -> bool:
        jobs = await jobs_now(link)
        lines = [line_of(jobs, RUNNER, watch.name) for watch in watches]
        return all(line and not live(line) for line in lines)

    if await watch_until(watches, ended, timeout_s):
        return True
    result.violate(f"the runs did not end by themselves in {timeout_s:g} s")
    return False


# ---------------------------------------------------------------- the final count


@dataclass(frozen=True, slots=True)
class Landing:
    """Where a dataset's run ended against its budget."""

    tokens: int
    overshoot: int
    largest: int
    """The longest response in the file, in tokens."""


def count_final(result: ScenarioResult, watch: DatasetWatch, shape: RunShape) -> Landing:
    """Lost, duplicated and corrupt records; the budget met by the one rule, within one answer."""
    watch.look()
    path = watch.folder / "raw_responses.jsonl"
    final = read_final(path)
    result.attempted += len(watch.acknowledged | final.ids.keys())
    result.acknowledged += len(watch.acknowledged)
    result.lost += len(watch.acknowledged - final.ids.keys())
    result.duplicated += sum(count - 1 for count in final.ids.values())
    result.corrupt += final.corrupt_lines + len(watch.bad_offsets)
    landing = _landing(path, shape.budget)
    left = len(set(watch.prompt_ids) - final.ids.keys()) - error_lines(watch.folder)
    if not generation_done(landing.tokens, shape.budget, left):
        result.violate(
            f"{watch.name}: ended at {landing.tokens:,} tokens of {shape.budget:,} with {left} "
            "prompts left: not done by the one rule"
        )
    elif not 0 <= landing.overshoot <= shape.max_new_tokens:
        result.violate(
            f"{watch.name}: ended {landing.overshoot:+,} tokens from its budget of "
            f"{shape.budget:,} (more than one response: max_new_tokens {shape.max_new_tokens})"
        )
    reason = status(watch.folder).get("stop_reason")
    if reason != "budget":
        result.violate(f"{watch.name}: the last run's stop_reason is {reason!r}, not 'budget'")
    return landing


def _landing(path: Path, budget: int) -> Landing:
    lengths = [
        int(json.loads(line)["completion_tokens"])
        for line in path.read_bytes().splitlines(keepends=True)
        if line.endswith(b"\n")
    ]
    return Landing(sum(lengths), sum(lengths) - budget, max(lengths, default=0))


def error_lines(folder: Path) -> int:
    """Lines in the dataset's errors.jsonl (prompts marked failed)."""
    path = folder / "errors.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


# ---------------------------------------------------------------- killing a job


@dataclass(frozen=True, slots=True)
class Kill:
    """One SIGKILL: the job it hit, when, and when its process was seen gone."""

    job: JobInfo
    at: float
    gone_at: float
    wall: float
    """The kill's epoch time, to compare with the agent's `started_at` of the restart."""


async def sigkill(job: JobInfo, watches: list[DatasetWatch]) -> Kill:
    """SIGKILL the job's own process (its shim records the end), and wait until it is gone.

    The datasets are looked at once it is gone: what it wrote before it died is not counted as
    the restarted run generating again.
    """
    pid = job.pid or 0
    ticks = start_ticks(pid)
    at, wall = time.monotonic(), time.time()
    with contextlib.suppress(ProcessLookupError):
        kill_process(pid, signal.SIGKILL)
    if ticks is not None:
        await wait_until(lambda: not is_same_process(pid, ticks), GONE_TIMEOUT_S, LOOK_S / 3)
    for watch in watches:
        watch.look()
    return Kill(job, at, time.monotonic(), wall)


def check_restarts(
    result: ScenarioResult, line: list[JobInfo], kills: list[Kill],
    ended: tuple[str, str | None] = ("killed", "SIGKILL"),
) -> None:  # fmt: skip
    """One run per kill plus the first, each the restart of the one before it, which `ended`."""
    if len(line) != len(kills) + 1:
        name = line[0].name if line else "the line"
        result.violate(f"{len(line)} runs of {name} for {len(kills)} kills")
    for before, after in zip(line, line[1:], strict=False):
        if after.restart_of != before.id:
            result.violate(f"{after.id} restarts {after.restart_of}, not {before.id}")
        if (before.state, before.exit_signal) != ended:
            result.violate(f"{before.id} ended {before.state}/{before.exit_signal}, not {ended[0]}")
    for kill, after in zip(kills, line[1:], strict=False):
        result.detection_s.append((after.started_at or kill.wall) - kill.wall)


# ---------------------------------------------------------------- asking the agent


def line_of(jobs: tuple[JobInfo, ...], name: str, dataset: str | None = None) -> list[JobInfo]:
    """The agent's own jobs of one line (a job name and its dataset), oldest first."""
    found = [j for j in jobs if not j.external and j.name == name and j.dataset == dataset]
    return sorted(found, key=lambda j: (j.started_at or 0.0, j.id))


def live(jobs: list[JobInfo]) -> list[JobInfo]:
    """Those still starting, running or stopping."""
    return [job for job in jobs if job.state in LIVE_JOB_STATES]


async def quiet_line(link: AgentLink, job: str, dataset: str | None) -> list[JobInfo]:
    """The line once no job starts or stops and no restart waits, the same three scans later."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        line = line_of(await jobs_now(link), job, dataset)
        late = time.monotonic() > deadline
        if _quiet(line) or late:
            await observer_scans(link, 3)
            again = line_of(await jobs_now(link), job, dataset)
            if late or [(j.id, j.state) for j in again] == [(j.id, j.state) for j in line]:
                return again
        await asyncio.sleep(0.1)


def _quiet(line: list[JobInfo]) -> bool:
    busy = [job for job in line if job.state in ("starting", "stopping")]
    pending = [job for job in line if (job.restart_note or "").startswith(("restarting", "wait"))]
    return not busy and not pending
