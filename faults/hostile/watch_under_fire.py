"""The budget guard with hostile files beside the run, and nobody watching.

A hand-started runner, capped only by its sample count, generates into a dataset whose budget
has `guard = "stop"`; beside it run a training job and an evaluation job whose files every
snapshot reads: a trainer config holding a YAML alias bomb and `max_steps: "²"`, an eval.json
holding 1e400, and a training log of thirty 12 KB lines and a tqdm bar redrawn with carriage
returns and no newline. Each of these once stopped every snapshot, and the guard with them: the
run went on to ten times its budget.

Checks: the runner is stopped by its signal (exit 3), within a drain's worth of its budget; one
`budget_guard` alert; the training panel reads the redrawn bar to its newest step past the long
lines; the report with an infinity is no report; a snapshot takes under SNAPSHOT_LIMIT_S.
detection_s is the time from the response that met the budget to the runner's exit; recovery_s
is how long a snapshot takes afterwards, the hostile files still there.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT,
    DatasetsConfig,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from faults.harness.agents import local_agent
from faults.result import Scale, ScenarioResult
from tests.support.operations import local_link
from tests.support.runner_files import response_tokens, start_runner, write_id_prompts
from tests.support.simulator_process import running_simulator

TITLE = "The budget guard with hostile trainer, report and log files beside it, nobody watching"

BUDGET = 3000
MEAN_TOKENS = 100
CONCURRENCY = 4
DRAIN_ALLOWANCE = 20 * CONCURRENCY * MEAN_TOKENS
"""Tokens past the budget the stop's drain may still write (the guard's test allows the same)."""
EXIT_WAIT_S = 90.0
SNAPSHOT_LIMIT_S = 2.0
ALIAS_BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
REDRAWN_STEPS = 200
TRAINER = (
    "import sys, time\n"
    "for n in range(30): print('loss=' + '9' * 12000 + f' step {n}', flush=True)\n"
    f"for n in range({REDRAWN_STEPS}): sys.stdout.write(f'\\rTraining:  {{n // 2}}%|####| {{n}}/{REDRAWN_STEPS} "
    "[00:01<00:01, 9.9it/s, loss=1.0]'); sys.stdout.flush()\n"
    "time.sleep(600)\n"
)


def hostile_pipeline(folder: Path) -> PipelineConfig:
    """The guarded dataset, and train and evaluate jobs whose files hold hostile values."""
    (folder / "train.yaml").write_text(f'{ALIAS_BOMB}training:\n  max_steps: "²"\nx: *i\n')
    (folder / "eval").mkdir(exist_ok=True)
    (folder / "eval" / "eval.json").write_text(
        '{"verdict": "x", "finished_at": 1e400, "levels": [{"concurrency": 1e400}]}'
    )
    (folder / "trainer.py").write_text(TRAINER)
    trainer = (sys.executable, str(folder / "trainer.py"), "specforge", "train", "--config",
               str(folder / "train.yaml"))  # fmt: skip
    evaluate = ("bash", "-c", "sleep 600", "--out", str(folder / "eval"))
    inference = JobSpec(("{python}", "-m", "agent.pipeline.inference"), kind="inference",
                        grace_s=20)  # fmt: skip
    datasets = DatasetsConfig(str(folder / "datasets"), budget=BUDGET, guards={"B3_math": "stop"})
    return PipelineConfig(datasets=datasets, jobs={
        "inference": inference, "train": JobSpec(trainer, kind="train"),
        "evaluate": JobSpec(evaluate, kind="evaluate"),
    })  # fmt: skip


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`trials` guarded runs, each on a fresh agent and dataset."""
    result = ScenarioResult("watch_under_fire", TITLE, seed)
    trials = scale.pick(full=3, quick=1)
    over: list[int] = []
    for trial in range(trials):
        folder = workdir / f"trial-{trial}"
        (folder / "datasets" / "B3_math").mkdir(parents=True)
        tokens = await _trial(folder, result, f"trial {trial + 1}")
        over.append(tokens - BUDGET)
    result.notes.append(
        f"{trials} run(s) at budget {BUDGET:,}: tokens past it {', '.join(f'{o:,}' for o in over)} "
        f"(allowed {DRAIN_ALLOWANCE:,}: the stop's drain at concurrency {CONCURRENCY}); without "
        "the isolated readers such a run reached 2,980 tokens at a budget of 300"
    )
    return result


async def _trial(folder: Path, result: ScenarioResult, name: str) -> int:
    dataset = folder / "datasets" / "B3_math"
    write_id_prompts(dataset, 2000)
    pipeline = hostile_pipeline(folder)
    result.faults += 4  # the alias bomb, "²", 1e400, the long lines and the redrawn bar
    result.attempted += 1
    async with local_agent(folder / "state", pipeline) as link:
        for job in ("train", "evaluate"):
            await link.call(JOBS_LAUNCH, LaunchParams(job), idempotency_key=job)
        await link.close()  # nobody watches from here on
        with running_simulator(folder / "sim", "--speed", "10", "--mean-tokens",
                               str(MEAN_TOKENS), "--sd-tokens", "10") as sim:  # fmt: skip
            runner = start_runner(dataset, sim.url, "--max-samples", "1500",
                                  "--concurrency", str(CONCURRENCY))  # fmt: skip
            code = await asyncio.to_thread(_exit_code, runner)
            ended = time.time()
        snapshot, took = await _snapshot(folder, pipeline)
    tokens = response_tokens(dataset)
    result.detection_s.append(max(0.0, ended - _budget_met_at(dataset)))
    result.recovery_s.append(took)
    problems = _problems(code, tokens, snapshot, took)
    for problem in problems:
        result.violate(f"{name}: {problem}")
    result.acknowledged += int(not problems)
    return tokens


def _exit_code(runner: subprocess.Popen[str]) -> int | None:
    try:
        return runner.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        runner.kill()
        runner.wait()
        return None


async def _snapshot(folder: Path, pipeline: PipelineConfig) -> tuple[Snapshot, float]:
    async with local_link(folder / "state", pipeline) as link:
        started = time.monotonic()
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        return snapshot, time.monotonic() - started


def _budget_met_at(dataset: Path) -> float:
    """The `ts` of the response that brought the dataset to its budget."""
    done = 0
    for line in (dataset / "raw_responses.jsonl").read_bytes().splitlines():
        record = json.loads(line)
        done += record["completion_tokens"]
        if done >= BUDGET:
            return float(record["ts"])
    return time.time()


def _problems(code: int | None, tokens: int, snapshot: Snapshot, took: float) -> list[str]:
    problems = []
    if code != 3:
        problems.append(f"the runner was not stopped by its signal (exit {code})")
    if not BUDGET <= tokens <= BUDGET + DRAIN_ALLOWANCE:
        problems.append(f"{tokens:,} tokens for a budget of {BUDGET:,}")
    if [a.subject for a in snapshot.alerts if a.kind == "budget_guard"] != ["B3_math"]:
        problems.append("no single budget_guard alert for B3_math")
    steps = [t.step for t in snapshot.training]
    if len(steps) != 1 or (steps[0] or 0) < REDRAWN_STEPS - 2:
        problems.append(f"the training panel did not read the redrawn bar to its end: {steps}")
    if snapshot.evaluation is not None:
        problems.append("a report with an infinity was read as a report")
    if took > SNAPSHOT_LIMIT_S:
        problems.append(f"a snapshot took {took:.1f} s beside the hostile files")
    return problems
