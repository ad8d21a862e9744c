"""`export --exclude FILE`: an evaluation's prompts, and a prompt two datasets share, leave training."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.jobs.evaluation_exclude import with_evaluation_excluded
from agent.pipeline.export.__main__ import main
from agent.protocol import PipelineConfig
from console.demo.config_file import write_demo_config
from console.demo.workspace import Workspace
from tests.support.export_data import (
    KEEPS_TURNS,
    build_think_tokenizer,
    ids_of,
    read_jsonl,
    response,
    write_jsonl,
)

WORDS = [f"w{i}" for i in range(40)]
CHATS = "conversations/specforge.jsonl"


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "so answer"}, {"role": "user", "content": text}]


def dataset(root: Path, name: str, prompts: list[dict[str, Any]], vocab: dict[str, int]) -> None:
    write_jsonl(root / name / "prompts.jsonl", prompts)
    answer = ids_of(vocab, "w1 </think> so the answer <|im_end|>")
    write_jsonl(root / name / "raw_responses.jsonl", [response(p["id"], answer) for p in prompts])


def evaluation_sets(folder: Path, vocab: dict[str, int]) -> list[Path]:
    humaneval, gsm8k = folder / "humaneval.jsonl", folder / "gsm8k.jsonl"
    write_jsonl(humaneval, [
        {"id": "h0", "messages": [{"role": "user", "content": " ".join(WORDS[:20])}]},
        {"id": "h1", "input_ids": ids_of(vocab, " ".join(WORDS[24:40]))},
    ])  # fmt: skip
    write_jsonl(gsm8k, [{"id": "g0", "prompt": "Why is the sum?"}])
    return [humaneval, gsm8k]


def b1_prompts(vocab: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"id": "hit", "messages": chat("So: W3, W4 W5 w6 w7 w8 w9 w10 w11 w12 w13 w14 W15!")},
        {"id": "near", "messages": chat(" ".join(WORDS[3:15]) + " and w30 w31")},
        {"id": "ids-hit", "input_ids": ids_of(vocab, "why " + " ".join(WORDS[26:39]))},
        {"id": "short", "prompt": "WHY is -- the SUM"},
        {"id": "longer", "prompt": "why is the sum of w1"},
        {"id": "twin-a", "messages": chat("the answer is w20")},
        {"id": "twin-b", "messages": chat("the answer is w20")},
        {"id": "common", "messages": chat("so the answer w21")},
    ]


def trained(out: Path, name: str, form: str = "ids/ids.jsonl") -> set[str]:
    return {row["id"] for row in read_jsonl(out / name / form)}


def test_records_sharing_an_ngram_with_an_excluded_set_leave_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    root, out = tmp_path / "datasets", tmp_path / "out"
    dataset(root, "B1", b1_prompts(vocab), vocab)
    dataset(root, "B2", [{"id": "other", "messages": chat("so the answer w21")},
                         {"id": "own", "messages": chat("w22 w23")}], vocab)  # fmt: skip
    excluded = [str(path) for path in evaluation_sets(tmp_path / "eval", vocab)]

    code = main(["--datasets-root", str(root), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(out), "--chat-template", "lfm", "--exclude", *excluded])  # fmt: skip

    assert code == 0, capsys.readouterr().err
    assert trained(out, "B1") == {"near", "longer", "twin-a", "twin-b", "common"}
    assert trained(out, "B1", CHATS) == {"near", "twin-a", "twin-b", "common"}  # "longer": text
    assert trained(out, "B2") == trained(out, "B2", CHATS) == {"own"}
    chats = {"B1/near", "B1/twin-a", "B1/twin-b", "B1/common", "B2/own"}
    assert trained(out, "all") == {*chats, "B1/longer"}
    assert trained(out, "all", CHATS) == chats
    b1 = json.loads((out / "B1" / "quality.json").read_text())
    assert b1["contaminated"] == {"humaneval": 2, "gsm8k": 1}
    assert b1["contaminated_examples"] == {"humaneval": ["hit", "ids-hit"], "gsm8k": ["short"]}
    assert (b1["repeated_prompts"], b1["duplicate_prompts_across_datasets"]) == (1, {})
    b2 = json.loads((out / "B2" / "quality.json").read_text())
    assert b2["duplicate_prompts_across_datasets"] == {"B1": 1}
    assert b2["duplicate_prompts_examples"] == {"B1": ["other"]}
    assert b2["contaminated"] == {}
    summary = json.loads((out / "export_report.json").read_text())
    assert summary["contaminated"] == {"humaneval": 2, "gsm8k": 1}
    assert summary["duplicate_prompts_across_datasets"] == 1
    assert summary["exclude"]["ngram"] == 13
    assert summary["exclude"]["sets"]["gsm8k"] == {"file": excluded[1], "prompts": 1, "whole": 1}
    assert "humaneval 2" in (out / "B1" / "quality.md").read_text()


def test_a_shorter_ngram_catches_the_twelve_words_the_default_lets_through(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    root, out = tmp_path / "datasets", tmp_path / "out"
    dataset(root, "B1", b1_prompts(vocab), vocab)
    excluded = [str(path) for path in evaluation_sets(tmp_path / "eval", vocab)]

    code = main(["--datasets-root", str(root), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(out), "--exclude", excluded[0], "--ngram", "12"])  # fmt: skip

    assert code == 0, capsys.readouterr().err
    assert "near" not in trained(out, "B1")
    report = json.loads((out / "B1" / "quality.json").read_text())
    assert report["contaminated"] == {"humaneval": 3}


def test_without_exclude_only_prompts_of_earlier_datasets_leave_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    root, out = tmp_path / "datasets", tmp_path / "out"
    dataset(root, "A", [{"id": "x", "prompt": "w1 w2"}, {"id": "y", "prompt": "w3"}], vocab)
    dataset(root, "B", [{"id": "x2", "prompt": "w1 w2"}, {"id": "y", "prompt": "W3"}], vocab)

    assert main(["--datasets-root", str(root), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(out)]) == 0, capsys.readouterr().err  # fmt: skip

    assert trained(out, "A") == {"x", "y"}
    assert trained(out, "B") == {"y"}, "the same contents, not the same id, make a copy"
    summary = json.loads((out / "export_report.json").read_text())
    assert (summary["contaminated"], summary["exclude"]) == ({}, {"ngram": 13, "sets": {}})
    assert "No evaluation set excluded" in (out / "export_report.md").read_text()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "prompts file {file} not found"),
        ("", "--exclude {file}: no prompt in it"),
        ('{"id": "a", "prompt": "w1"}\nnot json\n', "{file} line 2: not valid JSON"),
        ('{"id": "a", "answer": "w1"}\n', "{file} line 1: needs messages (a list), prompt"),
        ('{"id": "a", "prompt": "?!"}\n', "--exclude {file}: no prompt in it has a word"),
    ],
)
def test_an_exclude_file_that_cannot_serve_is_named_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    dataset(tmp_path / "datasets", "B1", b1_prompts(vocab), vocab)
    bad = tmp_path / "eval.jsonl"
    if content is not None:
        bad.write_text(content)

    code = main(["--datasets-root", str(tmp_path / "datasets"), "--tokenizer",
                 str(tmp_path / "tok"), "--out", str(tmp_path / "out"), "--exclude", str(bad)])  # fmt: skip

    err = capsys.readouterr().err
    assert code == 2
    assert words.format(file=bad) in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--ngram", "7"], "--ngram 7 must be from 8 to 50 words"),
        (["--exclude", "{a}/x/mbpp.jsonl", "{b}/x/mbpp.jsonl"], "both be reported as 'x/mbpp'"),
    ],
)
def test_a_wrong_ngram_or_two_sets_of_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    dataset(tmp_path / "datasets", "B1", b1_prompts(vocab), vocab)
    for folder in ("a", "b"):
        write_jsonl(tmp_path / folder / "x" / "mbpp.jsonl", [{"id": "m", "prompt": "w1 w2"}])
    filled = [arg.format(a=tmp_path / "a", b=tmp_path / "b") for arg in args]

    code = main(["--datasets-root", str(tmp_path / "datasets"), "--tokenizer",
                 str(tmp_path / "tok"), "--out", str(tmp_path / "out"), *filled])  # fmt: skip

    assert code == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def flag_values(argv: tuple[str, ...], flag: str) -> list[str]:
    """The values after each `flag`, up to the next flag."""
    values, taking = [], False
    for arg in argv:
        if arg.startswith("--"):
            taking = arg == flag
        elif taking:
            values.append(arg)
    return values


def test_the_demo_config_keeps_the_evaluations_prompts_out_of_training(tmp_path: Path) -> None:
    space = Workspace(tmp_path / "demo")
    space.root.mkdir()
    jobs = write_demo_config(space, 30000, None).pipeline.jobs
    evaluate = next(spec for spec in jobs.values() if spec.kind == "evaluate")
    export = next(spec for spec in jobs.values() if spec.kind == "export")

    evaluated = flag_values(evaluate.argv, "--prompts")
    assert evaluated
    launched = with_evaluation_excluded(export.argv, export.kind, PipelineConfig(jobs=jobs), {})
    assert set(evaluated) <= set(flag_values(launched, "--exclude"))
