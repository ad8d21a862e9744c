"""Conversations regenerated turn by turn, exported in the forms the trainers read.

The runner writes them against the simulator; the export joins each conversation into one exact
record with loss on every regenerated answer (or the last), and SpecForge's own parser, given the
conversation form, trains on exactly each turn's prompt and answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.export.__main__ import main
from tests.support.drafters import trainers_importing
from tests.support.export_data import (
    KEEPS_TURNS,
    build_think_tokenizer,
    read_jsonl,
    write_jsonl,
)
from tests.support.runner_files import run_runner
from tests.support.simulator_process import running_simulator

SIM = ("--speed", "100", "--mean-tokens", "6", "--sd-tokens", "2", "--seed", "4")
WORDS = ("--vocab-size", "58", "--stop-id", "4")
"""Simulated ids within the tokenizer's vocabulary; 4 is its end of turn, <|im_end|>."""
CHATS = {
    "three": [
        {"role": "user", "content": "why is the sum"},
        {"role": "assistant", "content": "w30 w31"},
        {"role": "user", "content": "and so"},
        {"role": "assistant", "content": "w33"},
        {"role": "user", "content": "the answer"},
    ],
    "two": [
        {"role": "user", "content": "the sum"},
        {"role": "assistant", "content": "w1"},
        {"role": "user", "content": "why"},
    ],  # fmt: skip
    "one": [{"role": "user", "content": "why is the answer"}],
}


REWRITES_TURNS = KEEPS_TURNS.replace(
    "{{ m['content'] }}",
    "{% if m['role'] == 'assistant' %}(earlier){% else %}{{ m['content'] }}{% endif %}",
)
"""A template that writes every earlier answer otherwise than it was generated."""


def generate(tmp_path: Path, template: str, *runner_args: str) -> dict[str, dict[str, Any]]:
    build_think_tokenizer(tmp_path / "tok", template)
    folder = tmp_path / "d" / "B1"
    write_jsonl(folder / "prompts.jsonl", [{"id": k, "messages": m} for k, m in CHATS.items()])
    with running_simulator(tmp_path / "sim", *SIM, *WORDS) as sim:
        result = run_runner(folder, sim.url, "--tokenizer", str(tmp_path / "tok"),
                            "--max-new-tokens", "12", *runner_args)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return {r["id"]: r for r in read_jsonl(folder / "raw_responses.jsonl")}


def export(tmp_path: Path, *args: str) -> dict[str, Any]:
    code = main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(tmp_path / "o"), "--chat-template", "lfm", *args])  # fmt: skip
    assert code in (0, 1)
    report: dict[str, Any] = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    return report


def ids_records(tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")}


def trained_spans(mask: list[int]) -> list[tuple[int, int]]:
    spans, start = [], None
    for index, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = index
        elif not bit and start is not None:
            spans.append((start, index))
            start = None
    return spans


def test_one_exact_record_per_conversation_with_loss_on_every_regenerated_answer(
    tmp_path: Path,
) -> None:
    turns = generate(tmp_path, KEEPS_TURNS)
    report = export(tmp_path)

    records = ids_records(tmp_path)
    assert set(records) == {"three", "two", "one"}
    for name, count in (("three", 3), ("two", 2)):
        record = records[name]
        answers = [turns[f"{name}#turn{k}"]["output_ids"] for k in range(1, count + 1)]
        spans = trained_spans(record["loss_mask"])
        assert [record["input_ids"][a:b] for a, b in spans] == answers, name
        assert spans[-1][1] == len(record["input_ids"])  # the last answer ends the record
    assert (report["conversations_exported"], report["turns_exported"]) == (2, 5)
    assert report["quality"]["answers"] == 6


def test_the_conversation_form_is_what_specforges_parser_trains_on_turn_by_turn(
    tmp_path: Path,
) -> None:
    from specforge.data.preprocessing import preprocess_conversations
    from specforge.data.template import TEMPLATE_REGISTRY
    from transformers import AutoTokenizer

    turns = generate(tmp_path, KEEPS_TURNS)
    report = export(tmp_path)
    rows = read_jsonl(tmp_path / "o" / "B1" / "conversations" / "specforge.jsonl")
    kept = [row["id"] for row in rows]
    assert report["roundtrip"]["matched"] == len(rows) == report["roundtrip"]["checked"]
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    parsed = preprocess_conversations(
        tokenizer, [row["conversations"] for row in rows], TEMPLATE_REGISTRY.get("lfm"),
        max_length=100_000, train_only_last_turn=True, tools=[[]] * len(rows),
    )  # fmt: skip
    records = ids_records(tmp_path)
    for row_id, ids, mask in zip(kept, parsed["input_ids"], parsed["loss_mask"], strict=True):
        name = row_id.split("#")[0]
        answer_id = row_id if "#" in row_id else max(k for k in turns if k.startswith(name))
        answer = turns[answer_id]["output_ids"]
        ids, mask = ids[0].tolist(), mask[0].tolist()
        assert ids == records[name]["input_ids"][: len(ids)], row_id  # each turn, exactly
        assert [ids[a:b] for a, b in trained_spans(mask)] == [answer], row_id
    left_out = sum(s["count"] for s in report["conversations_left_out"].values())
    assert len(rows) + left_out == 6  # one row per answer, or a counted reason


def test_loss_on_the_last_answer_only_when_asked(tmp_path: Path) -> None:
    turns = generate(tmp_path, KEEPS_TURNS)
    export(tmp_path, "--loss-turns", "last")

    record = ids_records(tmp_path)["three"]
    [(start, end)] = trained_spans(record["loss_mask"])
    assert record["input_ids"][start:end] == turns["three#turn3"]["output_ids"]
    rows = read_jsonl(tmp_path / "o" / "B1" / "conversations" / "specforge.jsonl")
    assert all("#" not in row["id"] for row in rows)


def test_an_answer_the_template_rewrites_later_is_a_record_of_its_own(tmp_path: Path) -> None:
    turns = generate(tmp_path, REWRITES_TURNS)
    export(tmp_path)

    records = ids_records(tmp_path)
    assert set(records) == {"one", "two", "three", "two#turn1", "three#turn1", "three#turn2"}
    for earlier in ("three#turn1", "three#turn2", "two#turn1"):
        record = records[earlier]
        [(start, end)] = trained_spans(record["loss_mask"])
        assert record["input_ids"][start:end] == turns[earlier]["output_ids"]
        assert end == len(record["input_ids"])
        name = earlier.split("#")[0]
        assert len(trained_spans(records[name]["loss_mask"])) == 1  # trained once, not twice


def test_a_dropped_turn_ends_its_conversation_and_an_unfinished_one_keeps_its_turns(
    tmp_path: Path,
) -> None:
    turns = generate(tmp_path, KEEPS_TURNS)
    responses = tmp_path / "d" / "B1" / "raw_responses.jsonl"
    kept = [t for k, t in turns.items() if k != "three#turn3"]  # a run stopped before turn 3
    turns["two#turn2"]["finish_reason"] = "length"
    write_jsonl(responses, kept)
    report = export(tmp_path, "--drop", "truncated")

    records = ids_records(tmp_path)
    assert len(trained_spans(records["three"]["loss_mask"])) == 2
    assert len(trained_spans(records["two"]["loss_mask"])) == 1
    assert report["quality"]["dropped"] == {"truncated": 1}
    assert report["turns_exported"] == 3


@pytest.mark.parametrize("change", ["turns", "tokenizer"])
def test_a_conversation_whose_prompt_changed_since_is_counted_not_guessed(
    tmp_path: Path, change: str
) -> None:
    generate(tmp_path, KEEPS_TURNS)
    prompts = tmp_path / "d" / "B1" / "prompts.jsonl"
    chats = dict(CHATS)
    if change == "turns":
        chats["three"] = CHATS["three"][:3]
    else:
        chats["three"] = [{**m, "content": m["content"] + " w9"} for m in CHATS["three"]]
    write_jsonl(prompts, [{"id": k, "messages": m} for k, m in chats.items()])
    report = export(tmp_path)

    assert "three" not in ids_records(tmp_path)
    assert report["prompt_mismatch"]["count"] == 1


def test_dropped_reasoning_gets_no_loss_and_later_history_goes_without_it(
    tmp_path: Path,
) -> None:
    from transformers import AutoTokenizer

    from agent.datasets.response_lines import parse_response_line
    from agent.pipeline.export.marks import token_facts
    from agent.pipeline.export.turn_records import join_turns
    from agent.pipeline.inference.turns import plan_conversation

    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    thought = [vocab[w] for w in "<think> w1 w2 </think> the sum <|im_end|>".split()]
    said = [vocab[w] for w in "<think> w3 </think> so <|im_end|>".split()]
    lines = [
        parse_response_line(json.dumps({
            "id": f"c#turn{n}", "output_ids": ids, "conversation": "c", "turn": n, "turns": 2,
            "reasoning": "drop",
        }).encode())
        for n, ids in ((1, thought), (2, said))
    ]  # fmt: skip
    plan = plan_conversation(CHATS["two"])
    joined = join_turns(tokenizer, token_facts(tokenizer), plan, [ln for ln in lines if ln], "all")

    trained = {
        record.record_id: [record.input_ids[a:b] for a, b in trained_spans(record.loss_mask)]
        for record in joined.sequences
    }
    assert trained == {  # turn 1's answer is not in turn 2's history as generated: its own record
        "c": [[vocab["so"], vocab["<|im_end|>"]]],
        "c#turn1": [[vocab["the"], vocab["sum"], vocab["<|im_end|>"]]],
    }
    history = tokenizer.decode(joined.prompts[1])
    assert "w1" not in history
    assert "the sum <|im_end|>" in history


def test_both_trainers_load_the_joined_record_with_every_answers_loss(tmp_path: Path) -> None:
    from specforge.data.prompt_builder import prepare_prompt_tasks

    with trainers_importing():
        from speculators.data_generation.preprocessing import _preprocess_batch

    generate(tmp_path, KEEPS_TURNS)
    export(tmp_path)
    path = tmp_path / "o" / "B1" / "ids" / "ids.jsonl"
    records = ids_records(tmp_path)
    tasks = prepare_prompt_tasks(
        path, None, chat_template=None, max_length=100_000, is_preformatted=False,
        train_only_last_turn=True, cache_dir=None, cache_key=None, num_proc=None,
    )  # fmt: skip
    for task, record in zip(tasks, records.values(), strict=True):
        assert task["payload"] == {"input_ids": record["input_ids"],
                                   "loss_mask": record["loss_mask"]}  # fmt: skip
    rows = list(records.values())
    batch = {
        "input_ids": [r["input_ids"] for r in rows],
        "loss_mask": [r["loss_mask"] for r in rows],
    }
    passed = _preprocess_batch(batch, False, None, 100_000)
    assert [list(m) for m in passed["loss_mask"]] == [r["loss_mask"] for r in rows]
    assert len(trained_spans(records["three"]["loss_mask"])) == 3
