"""Hostile dataset files through the runner's resume and the vocab job, which must agree with the
agent's tracker on every line and never block on a FIFO or a device."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.datasets.file_lines import WINDOW_BYTES
from agent.datasets.tracker import ResponseCounter
from agent.pipeline.inference.records import CorruptRecordError, recover
from agent.pipeline.vocab.count import LineTally, list_batches
from tests.support.hostile_files import (
    HOSTILE_LINES,
    hostile_file,
    link_to_device,
    make_fifo,
    make_symlink_loop,
    overlong_line,
)
from tests.support.runner_files import run_runner, write_id_prompts
from tests.support.simulator_process import SimulatorProcess, agent_env

DEADLINE_S = 60


def test_the_tracker_resume_and_vocab_agree_on_every_hostile_line(tmp_path: Path) -> None:
    path = tmp_path / "B1" / "raw_responses.jsonl"
    path.parent.mkdir()
    offsets = hostile_file(path)
    counter = ResponseCounter(path)
    counter.update()
    tally = LineTally()
    vocab_ids = sum(batch.size for batch in list_batches(path, tally))
    with pytest.raises(CorruptRecordError) as refused:
        recover(path, repair=False)
    assert f"line at byte {offsets[0]} is not a response (JSON nested too deeply" in str(
        refused.value
    )
    assert f"{len(HOSTILE_LINES)} such line(s)" in str(refused.value)
    state = recover(path, repair=True)
    assert counter.corrupt_lines == tally.skipped == state.corrupt_lines_moved == len(HOSTILE_LINES)
    assert counter.responses == len(state.done_ids)
    assert counter.tokens == state.tokens
    assert vocab_ids == 3 + 2 + len(HOSTILE_LINES)  # ok-1, ok-2 and one id per after-N line
    aside = path.with_suffix(".corrupt").read_bytes()
    assert aside == b"".join(line + b"\n" for _, line in HOSTILE_LINES)
    assert recover(path, repair=False).done_ids == state.done_ids  # clean now


def test_resume_moves_a_line_longer_than_the_window_aside_without_holding_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "raw_responses.jsonl"
    good = json.dumps({"id": "a", "output_ids": [1]}).encode() + b"\n"
    big = overlong_line(WINDOW_BYTES + 5)
    after = json.dumps({"id": "b", "output_ids": [2, 3]}).encode() + b"\n"
    path.write_bytes(good + big + b"\n" + after)
    with pytest.raises(CorruptRecordError, match=f"line at byte {len(good)} is not a response "
                       r"\(a line of 16,777,2\d\d bytes, over the 16,777,216-byte limit\)"):  # fmt: skip
        recover(path, repair=False)
    state = recover(path, repair=True)
    assert (state.done_ids, state.tokens, state.corrupt_lines_moved) == ({"a", "b"}, 3, 1)
    assert path.read_bytes() == good + after
    assert path.with_suffix(".corrupt").stat().st_size == len(big) + 1


def test_resume_refuses_a_fifo_and_a_device_at_once(tmp_path: Path) -> None:
    fifo = make_fifo(tmp_path / "a" / "raw_responses.jsonl")
    with pytest.raises(OSError, match="is a FIFO"):
        recover(fifo, repair=False)
    device = link_to_device(tmp_path / "b" / "raw_responses.jsonl")
    with pytest.raises(OSError, match="is a character device"):
        recover(device, repair=False)


@pytest.mark.parametrize(
    ("name", "make", "code", "said"),
    [
        ("prompts.jsonl", make_fifo, 2, "prompts file {path} is a FIFO (named pipe)"),
        ("raw_responses.jsonl", make_fifo, 1, "{path} is a FIFO (named pipe)"),
        ("errors.jsonl", link_to_device, 1, "{path} is a character device"),
    ],
)
def test_the_runner_refuses_a_dataset_file_that_is_not_regular(
    simulator: SimulatorProcess, tmp_path: Path, name: str, make: object, code: int, said: str
) -> None:
    folder = tmp_path / "B1"
    write_id_prompts(folder, 3)
    path = folder / name
    path.unlink(missing_ok=True)
    make(path)  # type: ignore[operator]
    done = run_runner(folder, simulator.url)
    assert done.returncode == code, done.stderr
    assert f"runner: {said.format(path=path)}, not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def run_vocab(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.pipeline.vocab", "--datasets-root", str(root),
         "--out", str(out), "--target-vocab-size", "20", "--draft-vocab-size", "4"],
        env=agent_env(), capture_output=True, text=True, timeout=DEADLINE_S,
    )  # fmt: skip


@pytest.mark.slow
def test_vocab_refuses_a_fifo_and_skips_a_symlink_loop(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    (root / "A").mkdir(parents=True)
    (root / "A" / "raw_responses.jsonl").write_text(
        json.dumps({"id": "r0", "output_ids": [1, 2, 2, 3]}) + "\n"
    )
    make_symlink_loop(root, "L")
    built = run_vocab(root, tmp_path / "out")
    assert built.returncode == 0, built.stderr
    assert f"vocab: {root / 'L'} cannot be followed" in built.stderr
    make_fifo(root / "B" / "raw_responses.jsonl")
    refused = run_vocab(root, tmp_path / "out2")
    assert refused.returncode == 1
    assert (
        f"vocab: B: {root / 'B' / 'raw_responses.jsonl'} is a FIFO (named pipe)" in refused.stderr
    )
    assert "Traceback" not in refused.stderr
