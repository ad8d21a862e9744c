"""The torn-tail repair raced by a writer that holds no lock, for `hostile_writes`.

Each trial is a dataset with whole records, an old script appending to it with no lock (its
descriptor held open, or reopened for each half record), and repairs run meanwhile: in this
process, and once through the real runner while the script is stopped mid-record. Every record
the script says it wrote whole must still be in the file, once; the `.torn` file may hold only a
dead writer's tail; a refusal must say another process is writing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agent.pipeline.inference.options import EXIT_LOCKED
from agent.pipeline.inference.records import CorruptRecordError, recover
from agent.pipeline.inference.torn_tail import ConcurrentWriterError
from faults.result import ScenarioResult
from tests.support.datasets import response_line
from tests.support.lockless_writer import complete_ids, start_lockless_writer, stop_lockless_writer
from tests.support.runner_files import write_id_prompts
from tests.support.simulator_process import agent_env

REPAIRS_PER_TRIAL = 10
SETTLE_S = 0.05
"""The in-process repairs' settle period: short, so the trial races the writer often."""
RUNNER_TIMEOUT_S = 30
"""The runner under a live writer should refuse at once; past this it went on to run."""
DEAD_TAIL = b'{"id":"killed","output_ids":[1,2'


@dataclass
class RaceFigures:
    """What the trials add up to."""

    refusals: int = 0
    bytes_moved: int = 0
    dead_tail_bytes: int = 0


def _dataset(folder: Path, tail: bytes = b"") -> Path:
    write_id_prompts(folder, 3)
    path = folder / "raw_responses.jsonl"
    path.write_bytes("".join(response_line(f"r{i}", 5) for i in range(50)).encode() + tail)
    return path


async def race_trial(
    folder: Path, held: bool, result: ScenarioResult, figures: RaceFigures
) -> None:
    """Repairs while the writer appends; every acknowledged record must stay, once."""
    path = _dataset(folder)
    writer = await asyncio.to_thread(start_lockless_writer, path, held=held)
    try:
        for _ in range(REPAIRS_PER_TRIAL):
            result.faults += 1
            if not await _one_repair(path, result, figures):
                break
    finally:
        acknowledged = await asyncio.to_thread(stop_lockless_writer, writer)
    _count_records(path, acknowledged, result)


async def _one_repair(path: Path, result: ScenarioResult, figures: RaceFigures) -> bool:
    """One repair; False once the file is damaged (a cut half record met its other half)."""
    try:
        state = await asyncio.to_thread(recover, path, repair=False, settle_s=SETTLE_S)
    except ConcurrentWriterError as exc:
        figures.refusals += 1
        if "stop it first" not in str(exc):
            result.violate(f"a refusal that does not say what to do: {exc}")
        return True
    except CorruptRecordError as exc:
        result.violate(f"a repair under a live writer damaged the file: {exc}"[:300])
        return False
    figures.bytes_moved += state.torn_bytes_moved
    if state.torn_bytes_moved:
        result.violate(f"{state.torn_bytes_moved} bytes moved while a writer was appending")
    return True


def _count_records(path: Path, acknowledged: set[str], result: ScenarioResult) -> None:
    ids = complete_ids(path)
    result.attempted += len(acknowledged)
    result.acknowledged += len(acknowledged & set(ids))
    result.lost += len(acknowledged - set(ids))
    result.duplicated += len(ids) - len(set(ids))
    torn = path.with_suffix(".torn")
    if torn.exists():
        result.violate(f"{torn.stat().st_size:,} bytes of a live writer's records in {torn.name}")


async def runner_trial(folder: Path, result: ScenarioResult) -> None:
    """The real runner, started while the writer is stopped mid-record: refused, exit 4.

    How long it took to refuse, process start included, is the scenario's detection time.
    """
    path = _dataset(folder)
    writer = await asyncio.to_thread(start_lockless_writer, path, held=True, pause_mid_record=True)
    before = path.read_bytes()
    try:
        result.faults += 1
        began = time.monotonic()
        done = await asyncio.to_thread(_run_runner, folder)
        result.detection_s.append(time.monotonic() - began)
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess([], -1, "", f"no exit within {RUNNER_TIMEOUT_S} s")
    finally:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        acknowledged = await asyncio.to_thread(stop_lockless_writer, writer)
    if done.returncode != EXIT_LOCKED or "another process is writing to" not in done.stderr:
        result.violate(f"the runner under a live writer: exit {done.returncode}, {done.stderr!r}")
    if not path.read_bytes().startswith(before):
        result.violate("the runner changed the bytes a live writer had written")
    _count_records(path, acknowledged, result)


def dead_writer_trial(folder: Path, result: ScenarioResult, figures: RaceFigures) -> None:
    """A killed writer's tail, nobody writing: still moved, at the scanned newline."""
    path = _dataset(folder, DEAD_TAIL)
    result.faults += 1
    state = recover(path, repair=False, settle_s=SETTLE_S)
    figures.dead_tail_bytes += state.torn_bytes_moved
    if state.torn_bytes_moved != len(DEAD_TAIL) or len(complete_ids(path)) != 50:
        result.violate(f"a dead writer's tail: {state.torn_bytes_moved} bytes moved")
    result.repaired += 1


def _run_runner(folder: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "agent.pipeline.inference", "--server", "http://127.0.0.1:9",
        "--server-down-timeout", "1", "--dataset-dir", str(folder),
    ]  # fmt: skip
    return subprocess.run(
        command, env=agent_env(), capture_output=True, text=True, timeout=RUNNER_TIMEOUT_S
    )
