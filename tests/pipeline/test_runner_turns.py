"""Conversations regenerated turn by turn by the real runner against the simulator.

Each assistant turn is answered in order against the model's own earlier answers (their exact
ids in the prompt), each turn is its own record, and a run stopped at any turn boundary, or
killed mid-line, resumes to exactly what an uninterrupted run writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.export_data import KEEPS_TURNS, build_think_tokenizer, write_jsonl
from tests.support.runner_files import run_runner, status
from tests.support.simulator_process import running_simulator

SIM = ("--speed", "100", "--mean-tokens", "12", "--sd-tokens", "4", "--seed", "3")
WORDS = ("--vocab-size", "58", "--stop-id", "4")
"""Simulated ids within the test tokenizer's vocabulary; 4 is its end of turn, <|im_end|>."""
CHAT = [
    {"role": "system", "content": "the sum"},
    {"role": "user", "content": "why is the sum"},
    {"role": "assistant", "content": "w30 w31 w32"},
    {"role": "user", "content": "and so"},
    {"role": "assistant", "content": "w33 w34"},
    {"role": "user", "content": "the answer"},
]
PROMPTS = [
    {"id": "chat", "messages": CHAT},
    {"id": "one", "messages": [{"role": "user", "content": "why is the answer"}]},
    {"id": "two", "messages": [CHAT[1], CHAT[2], CHAT[3]]},
]


def records(folder: Path) -> list[dict[str, Any]]:
    text = (folder / "raw_responses.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def by_id(folder: Path) -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in records(folder)}


@pytest.fixture
def tokenizer(tmp_path: Path) -> Path:
    folder = tmp_path / "tok"
    build_think_tokenizer(folder, KEEPS_TURNS, newlines=True)
    return folder


def run(folder: Path, url: str, tokenizer: Path, *args: str) -> None:
    result = run_runner(folder, url, "--tokenizer", str(tokenizer), "--max-new-tokens", "24", *args)
    assert result.returncode == 0, result.stderr


def test_each_turn_is_answered_against_the_models_own_earlier_answers(
    tmp_path: Path, tokenizer: Path
) -> None:
    folder = tmp_path / "d"
    write_jsonl(folder / "prompts.jsonl", PROMPTS)
    with running_simulator(tmp_path / "sim", *SIM, *WORDS, "--flavor", "vllm") as sim:
        run(folder, sim.url, tokenizer, "--api", "openai-completions")

    kept = by_id(folder)
    assert set(kept) == {"chat#turn1", "chat#turn2", "chat#turn3", "one", "two#turn1",
                         "two#turn2"}  # fmt: skip
    assert "conversation" not in kept["one"]  # a plain chat stays one record under its id
    for turn in (1, 2, 3):
        record = kept[f"chat#turn{turn}"]
        assert (record["conversation"], record["turn"], record["turns"]) == ("chat", turn, 3)
        spans = record["turn_spans"]
        assert len(spans) == turn - 1
        for earlier, (start, end) in enumerate(spans, start=1):
            assert record["prompt_ids"][start:end] == kept[f"chat#turn{earlier}"]["output_ids"]
    from transformers import AutoTokenizer

    text = AutoTokenizer.from_pretrained(str(tokenizer)).decode(kept["chat#turn3"]["prompt_ids"])
    assert "w30 w31 w32" not in text
    assert "w33 w34" not in text
    assert all(said in text for said in ("the sum", "why is the sum", "and so", "the answer"))
    said = status(folder)
    assert (said["conversations"], said["conversations_done"]) == (2, 2)
    assert (said["turns"], said["turns_done"]) == (5, 5)
    assert said["tokens"] == sum(r["completion_tokens"] for r in kept.values())


def test_a_run_stopped_at_any_turn_boundary_or_torn_resumes_to_the_uninterrupted_answers(
    tmp_path: Path, tokenizer: Path
) -> None:
    whole = tmp_path / "whole"
    write_jsonl(whole / "prompts.jsonl", PROMPTS)
    with running_simulator(tmp_path / "sim", *SIM, *WORDS) as sim:
        run(whole, sim.url, tokenizer, "--concurrency", "1")
        reference = records(whole)
        lines = (whole / "raw_responses.jsonl").read_bytes().splitlines(keepends=True)
        for cut in range(len(lines)):
            for torn in (b"", lines[cut][: len(lines[cut]) // 2]):
                folder = tmp_path / f"cut{cut}-{len(torn)}"
                folder.mkdir()
                shutil.copy(whole / "prompts.jsonl", folder / "prompts.jsonl")
                (folder / "raw_responses.jsonl").write_bytes(b"".join(lines[:cut]) + torn)
                run(folder, sim.url, tokenizer)

                resumed = by_id(folder)
                assert len(records(folder)) == len(reference), (cut, torn)  # nothing twice
                for record in reference:
                    assert resumed[record["id"]]["output_ids"] == record["output_ids"], (
                        cut, record["id"],
                    )  # fmt: skip


def test_turns_last_keeps_the_history_as_written(tmp_path: Path, tokenizer: Path) -> None:
    folder = tmp_path / "d"
    write_jsonl(folder / "prompts.jsonl", PROMPTS)
    with running_simulator(tmp_path / "sim", *SIM, *WORDS, "--flavor", "vllm") as sim:
        run(folder, sim.url, tokenizer, "--api", "openai-completions", "--turns", "last")

    kept = by_id(folder)
    assert set(kept) == {"chat", "one", "two"}
    from transformers import AutoTokenizer

    text = AutoTokenizer.from_pretrained(str(tokenizer)).decode(kept["chat"]["prompt_ids"])
    assert "w30 w31 w32" in text
    assert status(folder)["conversations"] == 0


def test_a_turn_past_the_context_keeps_the_turns_before_it_and_marks_the_conversation(
    tmp_path: Path, tokenizer: Path
) -> None:
    folder = tmp_path / "d"
    asked, answered = CHAT[1], CHAT[2]
    many = [CHAT[0]] + [asked, answered] * 100
    empty = [{"role": "user", "content": ""}, {"role": "assistant", "content": "w1"},
             {"role": "user", "content": ""}]  # fmt: skip
    write_jsonl(folder / "prompts.jsonl", [
        {"id": "long", "messages": many}, {"id": "empty", "messages": empty}, PROMPTS[1],
    ])  # fmt: skip
    with running_simulator(tmp_path / "sim", *SIM, *WORDS, "--context-length", "400") as sim:
        run(folder, sim.url, tokenizer)

    kept = by_id(folder)
    assert {"empty#turn1", "empty#turn2", "one"} <= set(kept)
    long_turns = sorted(r["turn"] for r in kept.values() if r.get("conversation") == "long")
    assert long_turns == list(range(1, len(long_turns) + 1))
    assert 1 < len(long_turns) < 100
    marks = [json.loads(line) for line in (folder / "errors.jsonl").read_text().splitlines()]
    assert [(m["id"], m["permanent"]) for m in marks] == [("long", True)]
    assert "context" in marks[0]["reason"] or "longer" in marks[0]["reason"]
