"""Answers of another tokenizer never become training data.

A dataset's first answers came from a run with one tokenizer, its last 40 from a run with
another: the same words under other ids, so every prompt encodes to the same length, the server
counts the same prompt tokens, and the export (one tokenizer for decoding and encoding) round
trips them all. The ids were another vocabulary's. The runner now stamps each line with its
tokenizer's digest; the export leaves out the other stamps, counts them and exits 1. Real runner,
real simulator, real export, two tokenizers made here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.pipeline.tokenizer import load_tokenizer
from agent.pipeline.tokenizer.identity import STAMP, tokenizer_digest, vocabulary_digest
from tests.support.export_data import (
    KEEPS_TURNS,
    WORDS,
    answered_by_two_tokenizers,
    build_think_tokenizer,
    read_jsonl,
)
from tests.support.pipeline_runs import export

PROMPTS = 100
LATE = 40


def test_the_digest_is_the_vocabulary_not_the_folder(tmp_path: Path) -> None:
    one = build_think_tokenizer(tmp_path / "one", KEEPS_TURNS)
    build_think_tokenizer(tmp_path / "copy", KEEPS_TURNS)
    other = build_think_tokenizer(tmp_path / "other", KEEPS_TURNS, WORDS[::-1])

    digests = {name: tokenizer_digest(load_tokenizer(str(tmp_path / name), trust_remote_code=False))
               for name in ("one", "copy", "other")}  # fmt: skip

    assert digests["one"] == digests["copy"] == vocabulary_digest(one)
    assert digests["other"] == vocabulary_digest(other) != digests["one"]
    assert vocabulary_digest(one | {"the": one["sum"], "sum": one["the"]}) != digests["one"]


@pytest.mark.slow
def test_the_last_answers_from_another_tokenizer_are_left_out_and_the_export_fails(
    tmp_path: Path,
) -> None:
    first, later = answered_by_two_tokenizers(tmp_path, PROMPTS, LATE)
    folder = tmp_path / "datasets" / "B1"
    assert first.returncode == 0, first.stderr
    assert later.returncode == 0, later.stderr
    records = read_jsonl(folder / "raw_responses.jsonl")
    stamps = [record[STAMP] for record in records]
    assert len(set(stamps[: PROMPTS - LATE])) == len(set(stamps[PROMPTS - LATE :])) == 1
    ours = tokenizer_digest(load_tokenizer(str(tmp_path / "ours"), trust_remote_code=False))
    assert stamps[0] == ours != stamps[-1]
    assert json.loads((folder / "runner.json").read_text())[STAMP] == stamps[-1]

    done = export(
        tmp_path / "datasets", tmp_path / "ours", tmp_path / "out", "--held-out-share", "0"
    )

    assert done.returncode == 1, done.stderr  # no round trip without a template: this alone
    assert f"ANSWERS FROM ANOTHER TOKENIZER left out (B1 {LATE})" in done.stderr
    exported = {row["id"] for row in read_jsonl(tmp_path / "out" / "B1" / "ids" / "ids.jsonl")}
    assert exported == {record["id"] for record in records[: PROMPTS - LATE]}
    report = json.loads((tmp_path / "out" / "B1" / "quality.json").read_text())
    assert report["other_tokenizer"]["count"] == LATE
    assert ours in report["other_tokenizer"]["first"]
    assert (
        "answered under another tokenizer (left out) | 40"
        in (tmp_path / "out" / "B1" / "quality.md").read_text()
    )
