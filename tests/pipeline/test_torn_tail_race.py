"""A torn-tail repair moves only a tail nobody is writing.

A second runner's repair, racing an old script that appends with no lock, moved 24 MB of whole
records the script had just appended to raw_responses.torn, and 9 acknowledged records were gone.
A repair now proves the file still (no process has it open for writing, no change for a settle
period, the size it scanned at the cut) or refuses, moving nothing.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from agent.pipeline.inference.options import EXIT_LOCKED
from agent.pipeline.inference.records import CorruptRecordError, recover
from agent.pipeline.inference.torn_tail import ConcurrentWriterError
from tests.support.datasets import response_line
from tests.support.lockless_writer import complete_ids, start_lockless_writer, stop_lockless_writer
from tests.support.runner_files import run_runner, write_id_prompts

DEAD_WRITERS_TAIL = b'{"id":"killed","output_ids":[1,2'
RACE_TRIES_S = 60.0
"""How long repairs may be tried against a writer that reopens for each write: 20 tries beside
five busy workers once all fell where the writer had not been scheduled, and none was refused."""


def _dataset(folder: Path, tail: bytes = b"") -> Path:
    write_id_prompts(folder, 3)
    path = folder / "raw_responses.jsonl"
    path.write_bytes("".join(response_line(f"r{i}", 5) for i in range(20)).encode() + tail)
    return path


def _half_written(path: Path) -> subprocess.Popen[str]:
    return start_lockless_writer(path, held=True, pause_mid_record=True)


def _finish(writer: subprocess.Popen[str]) -> set[str]:
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    return stop_lockless_writer(writer)


def test_a_tail_a_live_writer_holds_open_is_refused_and_kept(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "B1")
    writer = _half_written(path)
    before = path.read_bytes()
    try:
        with pytest.raises(ConcurrentWriterError, match=r"another process is writing to .*B1"):
            recover(path, repair=False, settle_s=0.0)
        assert path.read_bytes() == before
    finally:
        acknowledged = _finish(writer)
    ids = complete_ids(path)
    assert acknowledged <= set(ids), "an acknowledged record was lost"
    assert len(ids) == len(set(ids))
    assert not path.with_suffix(".torn").exists()


def test_a_writer_that_reopens_for_each_write_is_caught_growing(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "B1")
    writer = start_lockless_writer(path, held=False)
    tries, refusals, deadline = 0, 0, time.monotonic() + RACE_TRIES_S
    try:  # 20 tries, and more until one is refused: a starved writer may leave a look still
        while (tries < 20 or not refusals) and time.monotonic() < deadline:
            tries += 1
            try:
                recover(path, repair=False, settle_s=0.05)
            except ConcurrentWriterError:
                refusals += 1
            except CorruptRecordError:
                break  # a cut half record met its other half: what the lost records left
    finally:
        acknowledged = stop_lockless_writer(writer)
    lost = acknowledged - set(complete_ids(path))
    assert not lost, f"{len(lost)} acknowledged record(s) lost"
    assert refusals, "the writer never left a torn tail: the race was not tried"
    assert not path.with_suffix(".torn").exists()


def test_a_dead_writers_tail_is_still_moved_at_the_scanned_offset(tmp_path: Path) -> None:
    path = _dataset(tmp_path / "B1", DEAD_WRITERS_TAIL)
    state = recover(path, repair=False, settle_s=0.0)
    assert state.torn_bytes_moved == len(DEAD_WRITERS_TAIL)
    assert path.with_suffix(".torn").read_bytes() == DEAD_WRITERS_TAIL + b"\n"
    assert complete_ids(path) == [f"r{i}" for i in range(20)]
    assert path.read_bytes().endswith(b"\n")


def test_the_runner_refuses_to_repair_under_a_live_writer(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    path = _dataset(folder)
    writer = _half_written(path)
    before = path.read_bytes()
    try:
        done = run_runner(folder, "http://127.0.0.1:9", "--server-down-timeout", "1")
    finally:
        acknowledged = _finish(writer)
    assert done.returncode == EXIT_LOCKED, done.stderr
    assert "another process is writing to" in done.stderr
    assert "stop it first" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_bytes().startswith(before)
    assert acknowledged <= set(complete_ids(path))
