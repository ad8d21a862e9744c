"""A torn record glued to the next one is corruption everywhere, and the complete record survives.

A failed write leaves the first bytes of a record; a writer that goes on appends its next record
on the same line. The agent, the runner's resume and the vocab builder must each report the line
and keep the complete record under its own id: never drop it silently, never count the fragment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.datasets.glued_lines import read_line
from agent.datasets.tracker import DatasetTracker
from agent.pipeline.vocab.count import LineTally, list_batches
from agent.protocol import DatasetsConfig
from tests.support.datasets import write_prompts


def record(rid: str, ids: list[int]) -> bytes:
    """A response line body as the runner writes it, SGLang's meta_info (with its own id) included."""
    meta = {"id": f"sglang-{rid}", "completion_tokens": len(ids), "finish_reason": {"type": "stop"}}
    body = {
        "id": rid, "output_ids": ids, "completion_tokens": len(ids), "prompt_tokens": 3,
        "finish_reason": "stop", "latency_s": 0.5, "runner_sha256": "ab" * 8, "meta_info": meta,
    }  # fmt: skip
    return json.dumps(body, separators=(",", ":")).encode()


A, B = record("a", [11, 12, 13]), record("b", [21, 22, 23, 24])
CUT_AFTER_TOKENS = A.index(b'"prompt_tokens"')
"""A cut here leaves `{"id":"a","output_ids":[...],"completion_tokens":3,` in front of b."""


@given(st.integers(min_value=1, max_value=len(A) - 1))
def test_every_cut_keeps_the_complete_record_under_its_own_id(cut: int) -> None:
    found = read_line(A[:cut] + B + b"\n")

    assert not found.clean
    ids = [r.id for r in found.responses]
    if A[:cut].rstrip().endswith(b":"):  # may open a nested object: reported, never miscounted
        assert ids in (["b"], [])
    else:
        assert ids == ["b"]
        assert found.responses[0].record == B
        assert found.fragment_bytes == cut


def test_two_whole_records_that_lost_their_newline_are_both_kept() -> None:
    found = read_line(A + B + b"\n")
    assert [(r.id, r.tokens) for r in found.responses] == [("a", 3), ("b", 4)]
    assert found.fragment_bytes == 0
    assert not found.clean


def test_a_torn_tail_closed_by_a_newline_is_no_record() -> None:
    for cut in range(1, len(A)):
        assert read_line(A[:cut] + b"\n").responses == ()


def test_a_hostile_line_of_braces_is_read_in_linear_time() -> None:
    assert read_line(b"{" * 2_000_000 + b"\n").responses == ()
    assert read_line(b'{"a":' * 100_000 + b"\n").responses == ()


def write_glued_dataset(folder: Path) -> None:
    write_prompts(folder, 4)
    c = record("c", [31])
    (folder / "raw_responses.jsonl").write_bytes(A[:CUT_AFTER_TOKENS] + B + b"\n" + c + b"\n")


def test_the_agent_counts_the_record_not_the_fragment_and_reports_the_line(
    tmp_path: Path,
) -> None:
    write_glued_dataset(tmp_path / "B1")
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path), budget=1000))

    [progress] = tracker.progress(1e9)

    assert (progress.responses, progress.tokens, progress.corrupt_lines) == (2, 5, 1)
    follower = tracker._followers["B1"]
    assert follower.responses.seen_ids == {"b", "c"}
    [alert] = [a for a in tracker.alerts((progress,), 1e9) if a.kind == "corrupt_file"]
    assert "first at byte 0" in alert.message


def test_vocab_counts_the_complete_record_and_tallies_the_line(tmp_path: Path) -> None:
    write_glued_dataset(tmp_path / "B1")
    tally = LineTally()

    counted = sorted(
        int(i)
        for batch in list_batches(tmp_path / "B1" / "raw_responses.jsonl", tally)
        for i in batch
    )

    assert counted == [21, 22, 23, 24, 31]
    assert (tally.glued, tally.skipped) == (1, 1)  # corrupt, as the agent and resume say
    assert "1 torn record(s) glued to a complete one" in tally.said()


@pytest.mark.parametrize("repair", [False, True])
def test_resume_refuses_a_glued_line_or_with_repair_keeps_its_record(
    tmp_path: Path, repair: bool
) -> None:
    from agent.pipeline.inference.records import CorruptRecordError, recover

    write_glued_dataset(tmp_path / "B1")
    path = tmp_path / "B1" / "raw_responses.jsonl"
    original = path.read_bytes()

    if not repair:
        with pytest.raises(CorruptRecordError, match="torn record glued to the complete record"):
            recover(path, repair=False)
        assert path.read_bytes() == original
        return
    state = recover(path, repair=True)

    assert state.done_ids == {"b", "c"}
    assert state.tokens == 5
    assert state.corrupt_lines_moved == 1
    assert [json.loads(line)["id"] for line in path.read_bytes().splitlines()] == ["b", "c"]
    assert path.with_suffix(".corrupt").read_bytes() == A[:CUT_AFTER_TOKENS] + B + b"\n"
