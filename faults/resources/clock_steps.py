"""The host's wall clock steps back and forward under a live run: the agent's figures hold.

A real daemon and a real runner (against the SGLang simulator) run with a wall clock that the
scenario steps (`faults.resources._stepped_clock`: time.time() plus an offset from a file, the monotonic
clock untouched), the way NTP or a VM resume steps a host: both see the same steps, the kernel's
file mtimes do not. After a warm-up every snapshot must show the dataset running with a writer,
a rate within a factor of three of the rate the checker measures itself, and an ETA; the
runner's own runner.json rate likewise; and each step must be announced by a clock_stepped
alert. Before the fix a step back left no ETA for an hour and a step forward made the rate
thousands of times too high or the run look stalled.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent.protocol import (
    SNAPSHOT_WATCH,
    DatasetProgress,
    DatasetsConfig,
    PipelineConfig,
    Snapshot,
    WatchParams,
)
from agent.state import StatePaths, read_json
from console.link.agent_link import AgentLink
from faults.harness.agents import shut_down_agent
from faults.result import Scale, ScenarioResult
from tests.support.clocks import live_run_problem
from tests.support.operations import local_link
from tests.support.runner_files import write_id_prompts
from tests.support.simulator_process import agent_env, running_simulator
from tests.support.waits import wait_until

TITLE = "Clock steps: the wall clock jumps back and forward under a live run"
WARM_UP_S = 8.0
HOLD_S = 6.0
STEPS_FULL = (-3600.0, 7200.0, -86400.0, 30.0, 3 * 86400.0)
STEPS_QUICK = (-3600.0, 7200.0)
FACTOR = 3.0
REPORTED_VIOLATIONS = 8


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Warm up, then step the clock and hold, checking every snapshot."""
    result = ScenarioResult("clock_steps", TITLE, seed)
    offset = workdir / "wall-offset"
    offset.write_text("0")
    folder = workdir / "datasets" / "B1"
    write_id_prompts(folder, 20_000)
    state_dir = workdir / "state"
    with running_simulator(workdir / "sim", "--speed", "20", "--mean-tokens", "60") as sim:
        daemon = _start(
            offset, workdir / "daemon.log", "agent", "serve", "--state-dir", str(state_dir)
        )
        runner = _start(offset, folder / "runner.log", "agent.pipeline.inference", "--server", sim.url,
                        "--dataset-dir", str(folder), "--concurrency", "8", "--max-new-tokens", "120")  # fmt: skip
        try:
            if not await wait_until(
                lambda: read_json(StatePaths(state_dir).daemon_info) is not None, 30
            ):
                result.violate("the stepped daemon did not start")
                return result
            pipeline = PipelineConfig(DatasetsConfig(str(folder.parent)))
            async with local_link(state_dir, pipeline) as link:
                await _play(link, offset, folder, scale, result)
        finally:
            runner.send_signal(signal.SIGINT)
            await asyncio.to_thread(runner.wait, 30)
            await shut_down_agent(state_dir)
            daemon.wait(10)
    return result


def _start(offset: Path, log: Path, module: str, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "faults.resources._stepped_clock", str(offset), "-m", module, *args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=agent_env(),
            start_new_session=True,
        )  # fmt: skip


async def _play(
    link: AgentLink, offset: Path, folder: Path, scale: Scale, result: ScenarioResult
) -> None:
    await link.call(SNAPSHOT_WATCH, WatchParams(0.5))
    seen: list[tuple[float, int]] = []
    await _hold(link, WARM_UP_S, seen, folder, None, result)
    total = 0.0
    for step in STEPS_FULL if scale.full else STEPS_QUICK:
        total += step
        offset.write_text(str(total))
        result.faults += 1
        await _hold(link, HOLD_S, seen, folder, step, result)
    rates = [t for _, t in seen]
    result.notes.append(
        f"steps {', '.join(f'{s:+g} s' for s in (STEPS_FULL if scale.full else STEPS_QUICK))}: "
        f"{result.acknowledged} of {result.attempted} snapshots after the warm-up had a sane rate, "
        f"an ETA and the run shown running ({len(rates)} snapshots in all)"
    )


async def _hold(
    link: AgentLink, seconds: float, seen: list[tuple[float, int]], folder: Path,
    step: float | None, result: ScenarioResult,
) -> None:  # fmt: skip
    deadline, announced = time.monotonic() + seconds, step is None
    while time.monotonic() < deadline:
        event = await asyncio.wait_for(link.next_event(), 10)
        if event is None or not isinstance(event.data, Snapshot):
            continue
        snapshot = event.data
        [progress] = snapshot.datasets
        seen.append((time.monotonic(), progress.tokens))
        announced = announced or any(a.kind == "clock_stepped" for a in snapshot.alerts)
        if step is None:
            continue  # warming up
        result.attempted += 1
        problem = _problem(progress, _true_rate(seen), folder)
        if problem is None:
            result.acknowledged += 1
        elif len(result.violations) < REPORTED_VIOLATIONS:
            result.violate(f"after a step of {step:+g} s: {problem}")
    if not announced:
        result.violate(f"no clock_stepped alert after the step of {step:+g} s")


def _true_rate(seen: list[tuple[float, int]]) -> float:
    """Tokens per second over the checker's own last ten seconds of snapshots."""
    now, tokens = seen[-1]
    then, before = next((t, n) for t, n in seen if now - t <= 10.0)
    return (tokens - before) / (now - then) if now > then else 0.0


def _problem(progress: DatasetProgress, true_rate: float, folder: Path) -> str | None:
    if (problem := live_run_problem(progress, true_rate, FACTOR)) is not None:
        return problem
    runner_rate = _runner_rate(folder)
    if runner_rate is None or runner_rate > true_rate * 10:
        return f"runner.json says {runner_rate} tokens/s, the checker measures {true_rate:.0f}"
    return None


def _runner_rate(folder: Path) -> float | None:
    try:
        value = json.loads((folder / "runner.json").read_text()).get("tokens_per_s")
    except (OSError, ValueError):
        return None
    return float(value) if isinstance(value, (int, float)) else None
