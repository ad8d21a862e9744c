"""Hostile files under a datasets root: the tracker keeps serving, with sane numbers.

Real FIFOs, sockets, device links, symlink loops and unreadable folders; every read that could
block runs in a thread with a deadline, so a regression fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.datasets.file_lines import WINDOW_BYTES
from agent.datasets.tracker import DatasetTracker, ResponseCounter
from agent.protocol import DatasetProgress, DatasetsConfig
from tests.support.datasets import response_line, write_prompts
from tests.support.hostile_files import (
    HOSTILE_LINES,
    hostile_file,
    link_to_device,
    make_fifo,
    make_socket,
    make_symlink_loop,
    no_dac_prefix,
    overlong_line,
)
from tests.support.simulator_process import agent_env

DEADLINE_S = 20.0


async def progress_within_deadline(tracker: DatasetTracker) -> dict[str, DatasetProgress]:
    """One scan, in a thread, that must end in time (a blocking open would not)."""
    scanned = await asyncio.wait_for(asyncio.to_thread(tracker.progress), DEADLINE_S)
    return {item.name: item for item in scanned}


def test_every_hostile_line_is_corrupt_with_its_offset_and_hides_nothing(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    offsets = hostile_file(path)
    counter = ResponseCounter(path)
    counter.update()
    assert counter.corrupt_lines == len(HOSTILE_LINES)
    assert counter.corrupt_offsets == offsets
    assert counter.responses == 2 + len(HOSTILE_LINES)  # ok-1, ok-2 and every after-N line
    assert counter.tokens == 3 + 2 + len(HOSTILE_LINES)
    assert counter.torn_tail_bytes == 0


def test_a_line_longer_than_the_read_window_is_corrupt_and_the_lines_after_it_count(
    tmp_path: Path,
) -> None:
    path = tmp_path / "raw_responses.jsonl"
    big = overlong_line(WINDOW_BYTES + 1000)
    path.write_bytes(response_line("a", 2).encode() + big[: WINDOW_BYTES + 10])
    counter = ResponseCounter(path)
    counter.update()
    assert (counter.responses, counter.corrupt_lines) == (1, 0)
    assert counter.torn_tail_bytes == WINDOW_BYTES + 10  # still being written: not judged yet
    with path.open("ab") as handle:
        handle.write(big[WINDOW_BYTES + 10 :] + b"\n" + response_line("b", 3).encode())
    counter.update()
    assert (counter.responses, counter.tokens, counter.corrupt_lines) == (2, 5, 1)
    assert counter.corrupt_offsets == [len(response_line("a", 2))]
    assert "longer than the 16,777,216-byte limit" in counter.first_corrupt_reason
    assert counter.torn_tail_bytes == 0


def test_a_growing_torn_line_longer_than_the_window_is_not_searched_again(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_bytes(b"x" * (WINDOW_BYTES * 2))
    counter = ResponseCounter(path)
    counter.update()
    assert counter.searched_to == WINDOW_BYTES * 2
    with path.open("ab") as handle:
        handle.write(b"y" * 10)
    counter.update()
    assert counter.searched_to == WINDOW_BYTES * 2 + 10
    assert (counter.offset, counter.corrupt_lines) == (0, 0)


def hostile_root(root: Path) -> None:
    """One good dataset and one of each kind of hostile entry."""
    write_prompts(root / "B1_good", 4)
    (root / "B1_good" / "raw_responses.jsonl").write_text(response_line("p0", 5))
    write_prompts(root / "B2_fifo_responses", 2)
    make_fifo(root / "B2_fifo_responses" / "raw_responses.jsonl")
    make_fifo(root / "B3_fifo_prompts" / "prompts.jsonl")
    write_prompts(root / "B4_device", 2)
    link_to_device(root / "B4_device" / "raw_responses.jsonl")
    make_socket(root / "B5_socket" / "prompts.jsonl")
    make_symlink_loop(root, "B6_loop")
    write_prompts(root / "B7_runner_json", 3)
    make_fifo(root / "B7_runner_json" / "runner.json")
    write_prompts(root / "B8_deep_runner_json", 3)
    (root / "B8_deep_runner_json" / "runner.json").write_text("[" * 100_000 + "]" * 100_000)
    write_prompts(root / "B9_odd_runner_json", 3)
    (root / "B9_odd_runner_json" / "runner.json").write_text(
        json.dumps(
            {
                "state": ["running"],
                "pid": 10**30,
                "updated_at": "soon",
                "budget": "²",
                "runner_sha256": {"x": 1},
                "in_flight": -4,
            }
        )  # fmt: skip
    )


async def test_fifos_devices_sockets_and_loops_never_block_nor_fail_the_snapshot(
    tmp_path: Path,
) -> None:
    root = tmp_path / "datasets"
    hostile_root(root)
    tracker = DatasetTracker(DatasetsConfig(str(root), budget=100))
    got = await progress_within_deadline(tracker)
    assert (got["B1_good"].responses, got["B1_good"].tokens, got["B1_good"].status) == (
        1,
        5,
        "idle",
    )
    for name in ("B2_fifo_responses", "B3_fifo_prompts", "B4_device", "B5_socket"):
        assert got[name].status == "error", name
    for name in ("B7_runner_json", "B8_deep_runner_json", "B9_odd_runner_json"):
        assert (got[name].status, got[name].writer_active, got[name].runner_state) == (
            "pending",
            False,
            None,
        ), name
    assert "B6_loop" not in got
    alerts = {(a.kind, a.subject): a.message for a in tracker.alerts(tuple(got.values()), 0.0)}
    assert (
        "is a FIFO (named pipe), not a regular file" in alerts["dataset_error", "B2_fifo_responses"]
    )
    assert "is a FIFO (named pipe)" in alerts["dataset_error", "B3_fifo_prompts"]
    assert "is a character device" in alerts["dataset_error", "B4_device"]
    assert "is a socket" in alerts["dataset_error", "B5_socket"]
    assert "B6_loop cannot be followed" in alerts["dataset_skipped", "B6_loop"]
    assert "skipped" in alerts["dataset_skipped", "B6_loop"]


async def test_a_dataset_that_fails_keeps_its_last_figures_and_the_others_keep_updating(
    tmp_path: Path,
) -> None:
    root = tmp_path / "datasets"
    for name in ("A", "B"):
        write_prompts(root / name, 3)
        (root / name / "raw_responses.jsonl").write_text(response_line("p0", 4))
    tracker = DatasetTracker(DatasetsConfig(str(root)))
    await progress_within_deadline(tracker)
    (root / "A" / "raw_responses.jsonl").unlink()
    make_fifo(root / "A" / "raw_responses.jsonl")
    with (root / "B" / "raw_responses.jsonl").open("a") as handle:
        handle.write(response_line("p1", 6))
    got = await progress_within_deadline(tracker)
    assert (got["A"].status, got["A"].responses, got["A"].tokens) == ("error", 1, 4)
    assert (got["B"].status, got["B"].responses, got["B"].tokens) == ("idle", 2, 10)
    os.unlink(root / "A" / "raw_responses.jsonl")
    (root / "A" / "raw_responses.jsonl").write_text(response_line("p0", 4) + response_line("p2", 1))
    got = await progress_within_deadline(tracker)
    assert (got["A"].status, got["A"].responses, got["A"].tokens) == ("idle", 2, 5)
    assert not [a for a in tracker.alerts(tuple(got.values()), 0.0) if a.kind == "dataset_error"]


async def test_a_bug_in_one_dataset_costs_that_dataset_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "datasets"
    for name in ("A", "B"):
        write_prompts(root / name, 2)
    tracker = DatasetTracker(DatasetsConfig(str(root)))
    real = tracker._one

    def broken_for_a(follower, *args):  # type: ignore[no-untyped-def]
        if follower.name == "A":
            raise ZeroDivisionError("division by zero")
        return real(follower, *args)

    monkeypatch.setattr(tracker, "_one", broken_for_a)
    got = await progress_within_deadline(tracker)
    assert (got["A"].status, got["B"].status) == ("error", "pending")
    [alert] = [a for a in tracker.alerts(tuple(got.values()), 0.0) if a.kind == "dataset_error"]
    assert "ZeroDivisionError" in alert.message
    assert "agent.log" in alert.message


SCAN = """
import json, sys
from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetsConfig
tracker = DatasetTracker(DatasetsConfig(sys.argv[1]))
progress = tracker.progress()
print(json.dumps({"names": [p.name for p in progress],
                  "alerts": [[a.kind, a.subject, a.message] for a in tracker.alerts(progress, 0.0)]}))
"""


def test_an_unreadable_folder_is_skipped_with_an_alert(tmp_path: Path) -> None:
    prefix = no_dac_prefix()
    if prefix is None:
        pytest.skip("root without setpriv cannot be kept out of a folder")
    root = tmp_path / "datasets"
    write_prompts(root / "A_fine", 2)
    write_prompts(root / "B_locked", 2)
    os.chmod(root / "B_locked", 0)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", SCAN, str(root)],
            env=agent_env(), capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
    finally:
        os.chmod(root / "B_locked", 0o755)
    seen = json.loads(done.stdout)
    assert seen["names"] == ["A_fine"]
    [[kind, subject, message]] = seen["alerts"]
    assert (kind, subject) == ("dataset_skipped", "B_locked")
    assert "cannot be entered (permission denied); skipped" in message
