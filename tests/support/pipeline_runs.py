"""The pipeline's own jobs run as the agent would run them, as subprocesses: export, evaluate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.export_data import write_jsonl
from tests.support.simulator_process import agent_env

EXPORT_TIMEOUT_S = 120.0


def export(root: Path, tokenizer: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m agent.pipeline.export` over `root`'s datasets into `out`."""
    command = [sys.executable, "-m", "agent.pipeline.export", "--datasets-root", str(root),
               "--tokenizer", str(tokenizer), "--out", str(out), *args]  # fmt: skip
    return subprocess.run(
        command, env=agent_env(), capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S
    )


EVAL_TIMEOUT_S = 120.0
SPEED = "1"
"""Simulated seconds per wall second: a 128-token answer takes ~1.6 s, so the fixed costs of a
request (a tick to notice it finished, the HTTP round trip) stay small beside it, even on a
loaded machine (at 2 a full test run bent the measured speedup from 2.4 to 1.6)."""
TARGET = ("--speed", SPEED, "--mean-tokens", "400", "--sd-tokens", "1", "--seed", "4",
          "--vocab-size", "1000")  # fmt: skip
"""Answers longer than --max-new-tokens: every request decodes exactly 128 tokens on both."""
LEVELS = "1,4"


def evaluate(
    tmp_path: Path, server: str, baseline: str | None, *args: str
) -> subprocess.CompletedProcess[str]:
    """`python -m agent.pipeline.evaluate` of `server` on 4 prompts, at concurrency 1 and 4."""
    prompts = tmp_path / "held_out.jsonl"
    write_jsonl(prompts, [{"id": i, "input_ids": [i + 1, i + 2, i + 3]} for i in range(8)])
    command = [sys.executable, "-m", "agent.pipeline.evaluate", "--server", server,
               "--prompts", str(prompts), "--num-prompts", "4", "--concurrency", LEVELS,
               "--max-new-tokens", "128", "--out", str(tmp_path / "out"), *args]  # fmt: skip
    if baseline:
        command += ["--baseline", baseline]
    return subprocess.run(command, env=agent_env(), capture_output=True, text=True,
                          timeout=EVAL_TIMEOUT_S)  # fmt: skip


def eval_json(tmp_path: Path) -> dict[str, Any]:
    """What `evaluate` wrote."""
    record: dict[str, Any] = json.loads((tmp_path / "out" / "eval.json").read_text())
    return record
