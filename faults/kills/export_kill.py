"""SIGKILL the training-data export at random moments while it writes, then run it to the end.

The real export (`python -m agent.pipeline.export`) reads two datasets of a few thousand answers
each and writes the per-dataset and merged files. Each kill lands once it has begun writing (a
`.partial` file exists), somewhere in the next second and a half. After every kill, a file under
its final name must be complete and equal to a clean run's (the export is deterministic), and a
report may exist only beside a complete set; the last, uninterrupted run must give exactly the
clean run's files and leave no partial file or scratch index behind.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import subprocess
import sys
import time
from pathlib import Path

from faults.result import Scale, ScenarioResult
from tests.support.export_data import (
    KEEPS_TURNS,
    build_think_tokenizer,
    ids_of,
    response,
    write_jsonl,
)
from tests.support.simulator_process import agent_env
from tests.support.waits import wait_until_blocking

TITLE = "Export SIGKILLed mid-write, then rerun"
ANSWERS = 3000
"""Per dataset: enough that writing takes a second or two."""
DATA_FILES = ("ids.jsonl", "specforge.jsonl")
START_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 300.0
POLL_S = 0.01


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Kill the export `scale.pick(40, 4)` times, then let it finish."""
    result = ScenarioResult("export_kill", TITLE, seed)
    await asyncio.to_thread(_campaign, scale.pick(40, 4), workdir, random.Random(seed), result)
    return result


def _campaign(kills: int, workdir: Path, rng: random.Random, result: ScenarioResult) -> None:
    root = _datasets(workdir)
    reference = _export(root, workdir, workdir / "reference")
    if reference.returncode != 0:
        result.violate(f"the clean export failed: {reference.stderr[-300:]}")
        return
    expected = _data_files(workdir / "reference")
    if len(expected) != 3 * len(DATA_FILES):  # B1, B2 and all/, each form
        result.violate(f"the clean export wrote {sorted(expected)}, not both forms of 3 groups")
        return
    result.attempted = sum(_lines(workdir / "reference" / name) for name in expected)
    out = workdir / "out"
    for trial in range(kills):
        _kill_mid_write(root, workdir, out, rng, result, trial)
        _check_after_kill(out, expected, result, trial)
    leftovers = len(list(out.glob("**/*.partial")) + list(out.glob(".export-index-*")))
    started = time.monotonic()
    final = _export(root, workdir, out)
    result.recovery_s.append(time.monotonic() - started)
    if final.returncode != 0:
        result.violate(f"the last run failed: {final.stderr[-300:]}")
        return
    got = _data_files(out)
    result.lost += sum(1 for name in expected if name not in got)
    result.corrupt += sum(1 for name, digest in got.items() if expected.get(name) != digest)
    result.acknowledged = sum(_lines(out / name) for name in got)
    left = list(out.glob("**/*.partial")) + list(out.glob(".export-index-*"))
    if left:
        result.violate(f"the last run left {[str(p.relative_to(out)) for p in left]}")
    result.repaired = leftovers
    result.notes.append(
        f"{leftovers} partial or scratch file(s) left by kills, removed by the last run"
    )


def _datasets(workdir: Path) -> Path:
    vocab = build_think_tokenizer(workdir / "tokenizer", KEEPS_TURNS)
    # a prompt of each dataset's own: one that two datasets share is trained on once
    for name, ask in (("B1", "why is the sum"), ("B2", "why is the answer")):
        keys = [f"{name}-{i}" for i in range(ANSWERS)]
        chat = [{"role": "user", "content": ask}]
        write_jsonl(
            workdir / "datasets" / name / "prompts.jsonl",
            [{"id": k, "messages": chat} for k in keys],
        )
        answer = ids_of(vocab, "w1 w2 </think> " + "the sum is w7 " * 30 + "<|im_end|>")
        write_jsonl(
            workdir / "datasets" / name / "raw_responses.jsonl", [response(k, answer) for k in keys]
        )
    return workdir / "datasets"


def _command(root: Path, workdir: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "agent.pipeline.export", "--datasets-root", str(root),
            "--tokenizer", str(workdir / "tokenizer"), "--out", str(out), "--weights", "B2=2",
            "--chat-template", "lfm"]  # fmt: skip


def _export(root: Path, workdir: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(root, workdir, out), env=agent_env(), capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)  # fmt: skip


def _kill_mid_write(
    root: Path, workdir: Path, out: Path, rng: random.Random, result: ScenarioResult, trial: int
) -> None:
    process = subprocess.Popen(_command(root, workdir, out), env=agent_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def writing() -> bool:
        return bool(list(out.glob("*/*/*.partial"))) or process.poll() is not None

    if not wait_until_blocking(writing, START_TIMEOUT_S, POLL_S):
        result.violate(f"trial {trial}: the export wrote nothing within {START_TIMEOUT_S:g} s")
    time.sleep(rng.uniform(0.0, 1.5))
    process.kill()
    process.wait()
    result.faults += 1


def _check_after_kill(
    out: Path, expected: dict[str, str], result: ScenarioResult, trial: int
) -> None:
    """Files under their final names are whole; a report only beside a whole set."""
    got = _data_files(out)
    for name, digest in got.items():
        if expected.get(name) != digest:
            result.corrupt += 1
            result.violate(f"trial {trial}: {name} is under its final name but not complete")
    if (out / "export_report.json").exists() and got != expected:
        result.violate(f"trial {trial}: a report beside an incomplete set of files")


def _data_files(out: Path) -> dict[str, str]:
    """sha256 of every data file under its final name, by path relative to `out`."""
    return {
        str(path.relative_to(out)): hashlib.sha256(path.read_bytes()).hexdigest()
        for name in DATA_FILES
        for path in sorted(out.glob(f"*/*/{name}"))
    }


def _lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)
