"""A slice of each dataset is kept out of training for the evaluation, each prompt's fate its own."""

from __future__ import annotations

import json
from pathlib import Path

from agent.pipeline.export.held_out import held_out_threshold, rank_key
from tests.support.export_data import build_think_tokenizer, read_jsonl, write_jsonl
from tests.support.pipeline_runs import export


def dataset(root: Path, name: str, count: int, order: int = 1) -> None:
    ids = list(range(count))[::order]
    write_jsonl(root / name / "prompts.jsonl",
                [{"id": f"{name}-{i}", "input_ids": [1, 2, 3 + i % 40]} for i in ids])  # fmt: skip
    write_jsonl(root / name / "raw_responses.jsonl", [
        {"id": f"{name}-{i}", "output_ids": [5, 6, 7], "completion_tokens": 3,
         "finish_reason": "stop"} for i in ids
    ])  # fmt: skip


def test_one_percent_of_the_draw_and_none_below_100_prompts() -> None:
    assert held_out_threshold(99) is None
    assert held_out_threshold(10**6, share=0.0) is None
    below = held_out_threshold(100)
    assert below is not None
    drawn = [rank_key(f"p{i}") for i in range(100_000)]
    assert 900 < sum(draw < below for draw in drawn) < 1100, "about 1 % of any ids"
    assert rank_key("a") == rank_key("a") != rank_key("b")


def expected_held(name: str, count: int) -> set[str]:
    below = held_out_threshold(count)
    assert below is not None
    return {f"{name}-{i}" for i in range(count) if rank_key(f"{name}-{i}") < below}


def test_held_out_prompts_leave_training_and_are_the_same_whatever_the_order(
    tmp_path: Path,
) -> None:
    build_think_tokenizer(tmp_path / "tokenizer")
    for run, order, count in (("one", 1, 300), ("two", -1, 300), ("grown", 1, 600)):
        root = tmp_path / run / "datasets"
        dataset(root, "B1", count, order)
        dataset(root, "B2", 40, order)
        done = export(root, tmp_path / "tokenizer", tmp_path / run / "out")
        assert done.returncode == 0, done.stderr
    one, two = tmp_path / "one" / "out", tmp_path / "two" / "out"
    held = {record["id"] for record in read_jsonl(one / "held_out" / "B1.jsonl")}
    assert held == expected_held("B1", 300)
    assert held, "this draw holds some out"
    assert held == {record["id"] for record in read_jsonl(two / "held_out" / "B1.jsonl")}
    grown = {r["id"] for r in read_jsonl(tmp_path / "grown" / "out" / "held_out" / "B1.jsonl")}
    assert held <= grown, "a dataset that grew holds out the same prompts, and new ones only"
    assert not (one / "held_out" / "B2.jsonl").exists(), "40 prompts: none held out"
    trained = {
        json.loads(line)["id"]
        for line in (one / "B1" / "ids" / "ids.jsonl").read_text().splitlines()
    }
    assert len(trained) == 300 - len(held)
    assert not held & trained, "a held-out prompt is never trained on"
    report = json.loads((one / "B1" / "quality.json").read_text())
    assert (report["held_out"], report["held_out_answered"]) == (len(held), len(held))
