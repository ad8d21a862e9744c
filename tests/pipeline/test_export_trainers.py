"""The export's files read by the real trainers: SpecForge's parser on specforge.jsonl gives exactly
ids.jsonl, its Config loads trainers/specforge.json, and what cannot be exact is left out, counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.export.__main__ import main
from agent.probes.pipeline_reports import PipelineReports
from agent.protocol import JobInfo
from tests.support.export_data import (
    KEEPS_TURNS,
    build_think_tokenizer,
    ids_of,
    read_jsonl,
    write_jsonl,
)
from tests.support.export_data import response as answer

USER = [{"role": "user", "content": "why is the sum"}]
MULTI = [*USER, {"role": "assistant", "content": "w1 w2"}, {"role": "user", "content": "and so"}]
ANSWERS = {
    "plain": (USER, "<think> w1 </think> the sum <|im_end|>", "stop"),
    "multi": (MULTI, "w3 w4 <|im_end|>", "stop"),
    "capped": (USER, "w1 w2 w3 w4", "length"),
    "long": (USER, " ".join(["w5"] * 30) + " <|im_end|>", "stop"),
}


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    prompts = [{"id": key, "messages": chat} for key, (chat, _, _) in ANSWERS.items()]
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl", prompts)
    responses = [
        answer(key, ids_of(vocab, text), finish) for key, (_, text, finish) in ANSWERS.items()
    ]
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", responses)
    return tmp_path, vocab


def run_export(tmp_path: Path, out: str, *args: str) -> int:
    return main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(tmp_path / out), "--max-length", "20", *args])  # fmt: skip


def specforge_rows(tmp_path: Path, path: Path) -> list[tuple[list[int], list[int]]]:
    from specforge.data.preprocessing import preprocess_conversations
    from specforge.data.template import TEMPLATE_REGISTRY
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    conversations = [row["conversations"] for row in read_jsonl(path)]
    result = preprocess_conversations(
        tokenizer, conversations, TEMPLATE_REGISTRY.get("lfm"), max_length=100_000,
        train_only_last_turn=True, tools=[[]] * len(conversations),
    )  # fmt: skip
    return [
        (ids[0].tolist(), mask[0].tolist())
        for ids, mask in zip(result["input_ids"], result["loss_mask"], strict=True)
    ]


def test_specforges_parser_trains_on_exactly_the_ids_form(exported: tuple[Path, Any]) -> None:
    tmp_path, _ = exported
    assert run_export(tmp_path, "o", "--chat-template", "lfm") == 0

    conversations = tmp_path / "o" / "B1" / "conversations" / "specforge.jsonl"
    kept = [row["id"] for row in read_jsonl(conversations)]
    assert kept == ["plain", "multi", "long"]  # capped: the template would close it
    exact = {row["id"]: row for row in read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")}
    for key, (ids, mask) in zip(kept, specforge_rows(tmp_path, conversations), strict=True):
        assert ids == exact[key]["input_ids"], key
        assert mask == exact[key]["loss_mask"], key
    report = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    assert report["roundtrip"] | {"examples": []} == {
        "checked": 3, "matched": 3, "mismatched_in": {}, "reasons": {}, "examples": [],
        "share": 1.0, "flagged": False, "threshold": 0.99, "other_templates": [],
    }  # fmt: skip
    [(why, left)] = report["conversations_left_out"].items()
    assert why.startswith("cut at the length limit")
    assert left["first"] == "capped"
    assert report["earlier_assistant_turns"] == 1
    over = [row for row in exact.values() if len(row["input_ids"]) > 20]
    assert report["cut"]["records"] == len(over) == 2  # multi and long, past --max-length 20
    assert report["cut"]["loss_tokens_cut"] == sum(sum(row["loss_mask"][20:]) for row in over)
    # what offline hidden states are captured over: each record cut at --max-length
    cut = sum(min(len(row["input_ids"]), 20) for row in exact.values())
    assert report["sequence_tokens"] == cut
    summary = json.loads((tmp_path / "o" / "export_report.json").read_text())
    assert (summary["sequence_tokens"], summary["records"]) == (cut, len(exact))
    job = JobInfo("export-1", "export", "export", "exited", ("--out", str(tmp_path / "o")))
    read = PipelineReports().export((job,))
    assert read is not None
    assert (read.sequence_tokens, read.records, read.max_length) == (cut, len(exact), 20)
    longest = max(min(len(row["input_ids"]), 20) for row in exact.values())
    assert read.longest_record == summary["longest_record"] == longest == 20


def test_a_template_that_adds_a_system_prompt_fails_and_names_one_that_does_not(
    exported: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path, _ = exported
    assert run_export(tmp_path, "o", "--chat-template", "qwen") == 1

    err = capsys.readouterr().err
    assert "ROUND TRIP FAILED" in err
    assert "adds the system prompt 'You are a helpful assistant.'" in err
    assert "lfm mark turns the same way with none" in err
    assert "or name --chat-template lfm" in err
    assert not read_jsonl(tmp_path / "o" / "B1" / "conversations" / "specforge.jsonl")
    assert len(read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")) == len(ANSWERS)
    trip = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())["roundtrip"]
    # the capped answer too: its prompt differs before its end does
    assert trip["reasons"] == {"the template adds a system prompt the model never saw": 4}


def test_specforge_loads_the_config_written_beside_and_it_trains_on_the_exact_form(
    exported: tuple[Path, Any],
) -> None:
    from specforge.config.schema import Config

    tmp_path, _ = exported
    assert run_export(tmp_path, "o", "--chat-template", "lfm", "--model", "/models/target") == 0

    config = Config.from_file(str(tmp_path / "o" / "trainers" / "specforge.json"))
    assert config.data.prompts_path == str(tmp_path / "o" / "all" / "ids" / "ids.jsonl")
    assert (config.data.train_only_last_turn, config.data.max_length) == (True, 20)
    assert config.model.target_model_path == "/models/target"
    conversations = Config.from_file(
        str(tmp_path / "o" / "trainers" / "specforge-conversations.json")
    )
    assert conversations.data.chat_template == "lfm"
    assert conversations.data.train_data_path.endswith("all/conversations/specforge.jsonl")
    script = (tmp_path / "o" / "trainers" / "speculators.sh").read_text()
    assert f"--data {tmp_path / 'o' / 'all' / 'ids' / 'ids.jsonl'}" in script


def test_each_form_has_a_folder_of_its_own(exported: tuple[Path, Any]) -> None:
    tmp_path, _ = exported
    assert run_export(tmp_path, "o", "--chat-template", "lfm") == 0
    for group in ("B1", "all"):
        for form, name in (("ids", "ids.jsonl"), ("conversations", "specforge.jsonl")):
            assert [p.name for p in (tmp_path / "o" / group / form).iterdir()] == [name]


def test_conversations_without_a_template_is_refused(
    exported: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tmp_path, _ = exported
    assert run_export(tmp_path, "o", "--formats", "conversations") == 2
    assert "needs --chat-template" in capsys.readouterr().err
    assert run_export(tmp_path, "o", "--chat-template", "qwen9") == 2
    assert "known: " in capsys.readouterr().err


def test_a_qwen_style_target_is_told_the_truth_and_gets_no_config_for_an_empty_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a newline that is a token (Qwen's BPE), every SpecForge template for these turns puts
    loss on the "\\n" after `<|im_end|>`, which the model never generated."""
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS, newlines=True)
    prompts = [{"id": key, "messages": chat} for key, (chat, _, _) in ANSWERS.items()]
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl", prompts)
    responses = [answer(k, ids_of(vocab, text), why) for k, (_, text, why) in ANSWERS.items()]
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", responses)

    assert run_export(tmp_path, "o", "--chat-template", "lfm") == 1

    err = capsys.readouterr().err
    assert "puts loss on what follows the model's own end of turn" in err
    assert "no SpecForge template for these turns ends otherwise" in err
    assert "no other SpecForge template renders these rows" in err
    assert "or name --chat-template" not in err
    trainers = tmp_path / "o" / "trainers"
    assert not (trainers / "specforge-conversations.json").exists()  # its file would be empty
    assert (trainers / "specforge.json").exists()
    assert "No conversation config" in (trainers / "README.md").read_text()
    trip = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())["roundtrip"]
    assert trip["reasons"] == {"the trainer adds tokens after the end of turn the model wrote": 3}
    assert trip["other_templates"] == []


def test_an_export_of_no_row_writes_no_trainer_config(exported: tuple[Path, Any]) -> None:
    tmp_path, _ = exported
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", [])
    (tmp_path / "o" / "trainers").mkdir(parents=True)
    (tmp_path / "o" / "trainers" / "specforge.json").write_text("{}")  # an earlier export's

    run_export(tmp_path, "o", "--chat-template", "lfm")

    assert sorted(p.name for p in (tmp_path / "o" / "trainers").iterdir()) == ["README.md"]
