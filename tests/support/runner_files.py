"""Starting the runner as a real process, and reading back what it left on disk."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agent.datasets.tracker import DatasetTracker
from agent.pipeline.inference.options import EXIT_WRITE_FAILED
from agent.protocol import Alert
from tests.support.simulator_process import agent_env

RUN_TIMEOUT_S = 90.0


def write_id_prompts(folder: Path, count: int, *, start: int = 0) -> list[str]:
    """`count` prompts given as input_ids (no tokenizer needed); returns their ids."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = [f"p{i}" for i in range(start, start + count)]
    with (folder / "prompts.jsonl").open("w") as handle:
        for number, prompt_id in enumerate(ids):
            handle.write(json.dumps({"id": prompt_id, "input_ids": [1, 2, 3 + number % 40]}) + "\n")
    return ids


def runner_command(folder: Path, server: str, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "agent.pipeline.inference", "--server", server,
        "--dataset-dir", str(folder), *args,
    ]  # fmt: skip


def run_runner(folder: Path, server: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run to the end and return what it printed."""
    return subprocess.run(
        runner_command(folder, server, *args),
        env=agent_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


def start_runner(folder: Path, server: str, *args: str) -> subprocess.Popen[str]:
    """Start in the background (stderr goes to runner.log in the folder)."""
    with (folder / "runner.log").open("a") as log:
        return subprocess.Popen(
            runner_command(folder, server, *args),
            env=agent_env(),
            stdout=log,
            stderr=log,
            text=True,
        )


def status(folder: Path) -> dict[str, Any]:
    """runner.json, or {} before the first write."""
    try:
        record: dict[str, Any] = json.loads((folder / "runner.json").read_text())
    except FileNotFoundError:
        return {}
    return record


def wait_for_status(
    folder: Path, predicate: Any, timeout_s: float = RUN_TIMEOUT_S
) -> dict[str, Any]:
    """Poll runner.json until `predicate(record)` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        record = status(folder)
        if record and predicate(record):
            return record
        time.sleep(0.02)
    raise AssertionError(f"runner.json never matched; last: {status(folder)}")


def response_ids(folder: Path, *, allow_torn_tail: bool = False) -> Counter[str]:
    """How often each id occurs among the complete lines; asserts every complete line is valid."""
    counts: Counter[str] = Counter()
    path = folder / "raw_responses.jsonl"
    if not path.exists():
        return counts
    for line in path.read_bytes().splitlines(keepends=True):
        if allow_torn_tail and not line.endswith(b"\n"):
            break
        assert line.endswith(b"\n"), "a torn tail was left in place"
        record = json.loads(line)
        assert isinstance(record["output_ids"], list)
        counts[str(record["id"])] += 1
    return counts


def response_tokens(folder: Path) -> int:
    """Completion tokens in the responses file."""
    path = folder / "raw_responses.jsonl"
    return sum(json.loads(line)["completion_tokens"] for line in path.read_bytes().splitlines())


def write_stop_problems(folder: Path, code: int, errno_name: str) -> list[str]:
    """What is wrong, if anything, with how a run stopped on a write that failed with
    `errno_name`: exit code 5, and runner.json saying write_failed with that errno."""
    record = status(folder)
    error = record.get("write_error") or {}
    problems = []
    if code != EXIT_WRITE_FAILED or record.get("stop_reason") != "write_failed":
        problems.append(f"exit {code}, stop_reason {record.get('stop_reason')}")
    if error.get("errno") != errno_name:
        problems.append(f"runner.json's write_error is {error}")
    return problems


def dataset_alerts(tracker: DatasetTracker, kind: str, name: str) -> list[Alert]:
    """The tracker's alerts of `kind` about dataset `name`, now."""
    now = time.time()
    alerts = tracker.alerts(tracker.progress(now), now)
    return [a for a in alerts if a.kind == kind and name in a.subject.split(", ")]
