"""A slice of each dataset is kept out of training for the evaluation, the same slice every run."""

from __future__ import annotations

import json
from pathlib import Path

from agent.pipeline.export.held_out import held_out_count, rank_key
from tests.pipeline.test_export import export
from tests.support.export_data import build_think_tokenizer, read_jsonl, write_jsonl


def dataset(root: Path, name: str, count: int, order: int = 1) -> None:
    ids = list(range(count))[::order]
    write_jsonl(root / name / "prompts.jsonl",
                [{"id": f"{name}-{i}", "input_ids": [1, 2, 3 + i % 40]} for i in ids])  # fmt: skip
    write_jsonl(root / name / "raw_responses.jsonl", [
        {"id": f"{name}-{i}", "output_ids": [5, 6, 7], "completion_tokens": 3,
         "finish_reason": "stop"} for i in ids
    ])  # fmt: skip


def test_one_percent_at_most_64_and_none_below_100() -> None:
    assert [held_out_count(n) for n in (0, 99, 100, 250, 6_400, 10**6)] == [0, 0, 1, 2, 64, 64]
    assert held_out_count(10**6, most=0) == 0
    assert rank_key("a") == rank_key("a") != rank_key("b")


def test_held_out_prompts_leave_training_and_are_the_same_whatever_the_order(
    tmp_path: Path,
) -> None:
    build_think_tokenizer(tmp_path / "tokenizer")
    for run, order in (("one", 1), ("two", -1)):
        root = tmp_path / run / "datasets"
        dataset(root, "B1", 300, order)
        dataset(root, "B2", 40, order)
        done = export(root, tmp_path / "tokenizer", tmp_path / run / "out")
        assert done.returncode == 0, done.stderr
    one, two = tmp_path / "one" / "out", tmp_path / "two" / "out"
    held = {record["id"] for record in read_jsonl(one / "held_out" / "B1.jsonl")}
    assert len(held) == 3
    assert held == {record["id"] for record in read_jsonl(two / "held_out" / "B1.jsonl")}
    assert not (one / "held_out" / "B2.jsonl").exists(), "40 prompts: none held out"
    trained = {
        json.loads(line)["id"]
        for line in (one / "B1" / "ids" / "ids.jsonl").read_text().splitlines()
    }
    assert len(trained) == 297
    assert not held & trained, "a held-out prompt is never trained on"
    report = json.loads((one / "B1" / "quality.json").read_text())
    assert (report["held_out"], report["held_out_answered"]) == (3, 3)
