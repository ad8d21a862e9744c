"""A scan re-reads only the dataset folders that changed: thousands of still folders cost stats.

A folder keeps its last result (the very object) while its files, writers and jobs are as they
were and its figures cannot move with time alone; anything else is read again. Behaviour only:
a folder read again shows what a same-size rewrite that kept its mtime put in it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from agent.datasets.tracker import DatasetTracker
from agent.protocol import RATE_WINDOWS_S, DatasetProgress, DatasetsConfig
from tests.support.clocks import SteppedClock
from tests.support.datasets import response_line, write_prompts

STEP_S = 10.0


def write_dataset(folder: Path, responses: int) -> None:
    write_prompts(folder, 100)
    lines = "".join(response_line(f"p{i}", 10) for i in range(responses))
    (folder / "raw_responses.jsonl").write_text(lines)


def append_response(folder: Path, response_id: str) -> None:
    with (folder / "raw_responses.jsonl").open("a") as handle:
        handle.write(response_line(response_id, 10))


def scan(tracker: DatasetTracker, clock: SteppedClock) -> dict[str, DatasetProgress]:
    clock.monotonic_s += STEP_S
    return {item.name: item for item in tracker.progress()}


def settled_tracker(root: Path, names: list[str]) -> tuple[DatasetTracker, SteppedClock]:
    """A tracker that has scanned `names` (and any folder already there) twice: still folders
    have zero rates, so they settle."""
    for name in names:
        write_dataset(root / name, 3)
    clock = SteppedClock()
    tracker = DatasetTracker(DatasetsConfig(str(root)), clock)
    scan(tracker, clock)
    scan(tracker, clock)
    return tracker, clock


def test_a_changed_folder_is_read_again_and_an_unchanged_one_is_not(tmp_path: Path) -> None:
    status = tmp_path / "B" / "runner.json"
    write_dataset(tmp_path / "B", 3)
    status.write_text('{"state": "done"}')
    tracker, clock = settled_tracker(tmp_path, ["A"])
    before = scan(tracker, clock)
    rewrite_unstamped(status, '{"state": "gone"}')  # what a re-read would show
    append_response(tmp_path / "A", "p99")
    after = scan(tracker, clock)
    assert after["A"].responses == before["A"].responses + 1
    assert after["A"].tokens_per_s, "the folder that grew has a rate again"
    assert after["B"].runner_state == "done", "an unchanged, settled folder is not read again"


def rewrite_unstamped(path: Path, text: str) -> None:
    """New contents of the same size, in place, with the old mtime: its stamp does not change."""
    info = path.stat()
    assert len(text) == info.st_size
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_removed_folder_disappears_and_a_new_one_appears(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A", "C"])
    shutil.rmtree(tmp_path / "C")
    write_dataset(tmp_path / "D", 5)
    after = scan(tracker, clock)
    assert sorted(after) == ["A", "D"]
    assert after["D"].responses == 5


def test_a_run_starting_in_a_still_folder_is_seen_at_once(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A"])
    before = scan(tracker, clock)
    status = {"pid": os.getpid(), "state": "running", "updated_at": clock.wall(), "budget": 99}
    (tmp_path / "A" / "runner.json").write_text(json.dumps(status))
    after = scan(tracker, clock)
    assert after["A"] is not before["A"]
    assert after["A"].writer_active
    assert after["A"].target_tokens == 99


def test_an_errors_file_appearing_in_a_still_folder_is_read(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A"])
    assert scan(tracker, clock)["A"].failed_prompts == 0
    failed = {"id": "p50", "error": "400", "permanent": True}
    (tmp_path / "A" / "errors.jsonl").write_text(json.dumps(failed) + "\n")
    assert scan(tracker, clock)["A"].failed_prompts == 1, "a file missing before is looked for"


def test_a_folder_rewritten_in_place_to_the_same_size_is_read_again(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A"])
    before = scan(tracker, clock)
    path = tmp_path / "A" / "raw_responses.jsonl"
    path.write_text(path.read_text().replace('"p0"', '"q0"'))  # same size, same inode
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    after = scan(tracker, clock)
    assert after["A"] is not before["A"]


def test_a_still_folder_still_reports_every_window_rate_and_its_idle_age(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A"])
    first = scan(tracker, clock)
    first_age = first["A"].last_response_age_s(clock.wall())
    later = first
    for _ in range(8):
        later = scan(tracker, clock)
    assert later["A"].tokens_per_s_by_window == (0.0,) * len(RATE_WINDOWS_S)
    assert later["A"] is first["A"], "time alone changes nothing in a still folder's result"
    later_age = later["A"].last_response_age_s(clock.wall())
    assert first_age is not None
    assert later_age is not None
    assert later_age >= first_age + 8 * STEP_S, "its last response ages with the snapshot's time"


def test_a_still_folders_last_response_moves_with_a_wall_clock_step(tmp_path: Path) -> None:
    tracker, clock = settled_tracker(tmp_path, ["A"])
    before = scan(tracker, clock)["A"]
    clock.offset_s += 3600.0  # the wall clock steps an hour forward; nothing else happens
    after = scan(tracker, clock)["A"]
    assert before.last_response_at is not None
    assert after.last_response_at is not None
    assert after.last_response_at - before.last_response_at == pytest.approx(3600.0, abs=1.0)
    aged_before = before.last_response_age_s(clock.wall() - 3600.0 - STEP_S)
    assert aged_before is not None
    assert after.last_response_age_s(clock.wall()) == pytest.approx(
        aged_before + STEP_S, abs=1.0
    ), "its age is measured on the monotonic clock: the step does not age it"
