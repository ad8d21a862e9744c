"""Dataset counting on real files: appends, torn and corrupt lines, truncation and replacement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.datasets.root_listing import DatasetsRootError
from agent.datasets.tracker import DatasetTracker, ResponseCounter
from agent.protocol import DatasetsConfig
from tests.support.datasets import response_line, write_prompts, write_sample_root


def test_sample_root_counts(tmp_path: Path) -> None:
    expected = write_sample_root(tmp_path)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path), budget=100, budgets={"B3_math": 5}))
    got = {p.name: p for p in tracker.progress(1e9)}
    assert {n: (p.prompts, p.responses, p.tokens) for n, p in got.items()} == {
        n: (e.prompts, e.responses, e.tokens) for n, e in expected.items()
    }
    assert got["B1_sharegpt"].torn_tail_bytes == len('{"id": "p3", "out')
    assert got["B3_math"].budget == 5
    assert got["B3_math"].status == "over_budget"
    assert got["B2_ultrachat"].status == "pending"


def test_appends_are_read_incrementally_and_a_torn_line_counts_once_complete(
    tmp_path: Path,
) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_text(response_line("a", 5))
    counter = ResponseCounter(path)
    counter.update()
    with path.open("a") as handle:
        handle.write(response_line("b", 7)[:10])
    counter.update()
    assert (counter.responses, counter.tokens, counter.torn_tail_bytes) == (1, 5, 10)
    offset_before = counter.offset
    with path.open("a") as handle:
        handle.write(response_line("b", 7)[10:])
    counter.update()
    assert (counter.responses, counter.tokens, counter.torn_tail_bytes) == (2, 12, 0)
    assert counter.offset == offset_before + len(response_line("b", 7))


def test_truncated_and_replaced_files_are_rescanned(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_text(response_line("a", 5) + response_line("b", 6))
    counter = ResponseCounter(path)
    counter.update()
    path.write_text(response_line("a", 5))
    counter.update()
    assert (counter.responses, counter.tokens) == (1, 5)
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(response_line("x", 1) + response_line("y", 1) + response_line("z", 1))
    os.replace(replacement, path)
    counter.update()
    assert (counter.responses, counter.tokens) == (3, 3)


def test_a_corrupt_middle_line_raises_an_alert_with_its_offset(tmp_path: Path) -> None:
    folder = tmp_path / "B1"
    write_prompts(folder, 3)
    good = response_line("p0", 4)
    (folder / "raw_responses.jsonl").write_text(good + "{garbage\n" + response_line("p1", 4))
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path)))
    [progress] = tracker.progress(1e9)
    assert (progress.responses, progress.corrupt_lines) == (2, 1)
    [alert] = tracker.alerts((progress,), 1e9)
    assert alert.kind == "corrupt_file"
    assert f"first at byte {len(good)}" in alert.message


def test_lines_from_other_scripts_need_only_id_and_output_ids(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    path.write_text('{"id": 0, "output_ids": [1, 2, 3]}\n{"id": 1, "output_ids": []}\n')
    counter = ResponseCounter(path)
    counter.update()
    assert (counter.responses, counter.tokens, counter.corrupt_offsets) == (2, 3, [])


def test_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path / "gone")))
    with pytest.raises(DatasetsRootError, match="does not exist"):
        tracker.progress(1e9)


RECORDS = [response_line(f"r{i}", i + 1) for i in range(6)]
WHOLE = "".join(RECORDS).encode()


@settings(max_examples=len(WHOLE) + 1, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=len(WHOLE)))
def test_every_truncation_point_counts_exactly_the_complete_lines(tmp_path: Path, cut: int) -> None:
    path = tmp_path / f"cut-{cut}.jsonl"
    path.write_bytes(WHOLE[:cut])
    counter = ResponseCounter(path)
    counter.update()
    complete = WHOLE[:cut].count(b"\n")
    assert counter.responses == complete
    assert counter.tokens == sum(range(1, complete + 1))
    assert counter.corrupt_offsets == []
    assert counter.torn_tail_bytes == cut - (WHOLE[:cut].rfind(b"\n") + 1)
    path.write_bytes(WHOLE)
    counter.update()
    assert (counter.responses, counter.torn_tail_bytes) == (len(RECORDS), 0)
