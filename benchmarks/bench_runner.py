"""Inference runner: budget precision on a realistic length profile, and overhead per token.

Goals (issue: runner): |final - budget| / budget <= 0.5 % with 0 discarded tokens at budget 2M,
response length mean 3500 sd 1500, concurrency 64; >= 1M output tokens/s on one core against an
instant simulator.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.runner_files import runner_command, write_id_prompts
from tests.support.simulator_process import agent_env, running_simulator

BUDGET = 2_000_000


def run_measured(folder: Path, server: str, *args: str) -> tuple[float, float]:
    """Run the runner to the end; returns (wall seconds, CPU seconds of the runner process)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        runner_command(folder, server, *args), env=agent_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _, code, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(code)
    assert process.returncode == 0, f"runner exited {process.returncode}"
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def budget_precision(root: Path, seed: int) -> None:
    folder = root / f"precision-{seed}"
    write_id_prompts(folder, 2000)
    with running_simulator(
        root / f"sim-precision-{seed}", "--speed", "40", "--mean-tokens", "3500",
        "--sd-tokens", "1500", "--decode-rate", "20000", "--per-request-rate", "400",
        "--seed", str(seed),
    ) as sim:  # fmt: skip
        wall_s, _ = run_measured(
            folder, sim.url, "--token-budget", str(BUDGET), "--concurrency", "64",
            "--max-new-tokens", "16384",
        )  # fmt: skip
    status = json.loads((folder / "runner.json").read_text())
    error = (status["tokens"] - BUDGET) / BUDGET
    print(
        f"seed {seed}: budget {BUDGET:,}, final {status['tokens']:,} tokens ({error:+.3%}), "
        f"{status['responses']:,} responses, discarded {status['discarded_tokens']:,} tokens, "
        f"{wall_s:.1f} s wall (goal: |error| <= 0.5 %, 0 discarded)"
    )


def overhead(root: Path) -> None:
    folder = root / "overhead"
    write_id_prompts(folder, 1500)
    with running_simulator(
        root / "sim-overhead", "--speed", "0", "--skip-tokenizer-init", "--mean-tokens", "3500",
        "--sd-tokens", "1500",
    ) as sim:  # fmt: skip
        wall_s, cpu_s = run_measured(
            folder, sim.url, "--concurrency", "64", "--max-new-tokens", "16384"
        )
    tokens = json.loads((folder / "runner.json").read_text())["tokens"]
    print(
        f"instant simulator: {tokens:,} tokens in {wall_s:.2f} s = {tokens / wall_s:,.0f} output "
        f"tokens/s; runner CPU {cpu_s:.2f} s = {cpu_s / tokens * 1e6:.2f} CPU s per 1M tokens "
        f"({tokens / cpu_s:,.0f} tokens per CPU second; goal >= 1M/s on one core)"
    )


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for seed in (1, 2, 3):
            budget_precision(Path(folder), seed)
        overhead(Path(folder))
