"""The training-data export: exact ids, SpecForge's own shape, the round trip, the quality counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline.export.__main__ import main
from tests.support.export_data import (
    DROPS_TURNS,
    KEEPS_TURNS,
    build_think_tokenizer,
    ids_of,
    read_jsonl,
    response,
    write_jsonl,
)
from tests.support.pipeline_runs import export
from tests.support.remote_code.folder import (
    KimiLikeTokenizer,
    build_kimi_like_tokenizer,
    kimi_chats,
)
from tests.support.runner_files import run_runner
from tests.support.simulator_process import running_simulator

CHAT = [{"role": "system", "content": "so answer"}, {"role": "user", "content": "why is the sum"}]


@pytest.fixture(scope="module")
def kimi(tmp_path_factory: pytest.TempPathFactory) -> KimiLikeTokenizer:
    return build_kimi_like_tokenizer(tmp_path_factory.mktemp("models") / "kimi")


@pytest.mark.slow
def test_all_three_prompt_shapes_export_the_exact_ids_sent_and_generated(
    tmp_path: Path, kimi: KimiLikeTokenizer
) -> None:
    """Runner and export share one prompt encoding, through a tokenizer that ships its own code."""
    chats = kimi_chats()
    text = "Write a poem about the sea and the stars."
    sent = {f"c{i}": kimi.chat_ids(chat) for i, chat in enumerate(chats)}
    sent |= {"t": kimi.text_ids(text), "i": kimi.text_ids("What is the sum of 12 and 30?")}
    prompts: list[dict[str, Any]] = [{"id": f"c{i}", "messages": c} for i, c in enumerate(chats)]
    prompts += [{"id": "t", "prompt": text}, {"id": "i", "input_ids": sent["i"]}]
    write_jsonl(tmp_path / "datasets" / "B1" / "prompts.jsonl", prompts)
    with running_simulator(tmp_path / "sim", "--speed", "100", "--mean-tokens", "30", "--sd-tokens", "5",
                           "--vocab-size", str(kimi.vocab_size), "--seed", "3") as sim:  # fmt: skip
        ran = run_runner(tmp_path / "datasets" / "B1", sim.url, "--tokenizer", str(kimi.path),
                         "--trust-remote-code")  # fmt: skip
    assert ran.returncode == 0, ran.stderr

    refused = export(tmp_path / "datasets", kimi.path, tmp_path / "refused")
    exported = export(tmp_path / "datasets", kimi.path, tmp_path / "out", "--trust-remote-code",
                      "--min-roundtrip-share", "0")  # fmt: skip

    assert refused.returncode == 2
    assert "--trust-remote-code" in refused.stderr
    assert "tokenization_kimi.py" in refused.stderr
    assert not (tmp_path / "refused" / "B1").exists()
    assert exported.returncode == 0, exported.stderr
    generated = {
        r["id"]: r["output_ids"]
        for r in read_jsonl(tmp_path / "datasets" / "B1" / "raw_responses.jsonl")
    }
    rows = {row["id"]: row for row in read_jsonl(tmp_path / "out" / "B1" / "ids" / "ids.jsonl")}
    assert set(rows) == set(sent)
    for key, ids in sent.items():
        assert rows[key]["input_ids"] == ids + generated[key], key
        assert rows[key]["loss_mask"] == [0] * len(ids) + [1] * len(generated[key]), key
    assert not (tmp_path / "out" / "B1" / "conversations").exists()  # no --chat-template named
    assert "No conversation form" in (tmp_path / "out" / "export_report.md").read_text()
    merged = read_jsonl(tmp_path / "out" / "all" / "ids" / "ids.jsonl")
    assert {row["id"] for row in merged} == {f"B1/{key}" for key in sent}


def _think_dataset(root: Path, vocab: dict[str, int]) -> tuple[list[int], list[int]]:
    """One chat prompt whose answer reasons between <think> and </think>; (sent, output)."""
    sent = ids_of(vocab, "<|im_start|> system so answer <|im_end|> <|im_start|> user why is the "
                         "sum <|im_end|> <|im_start|> assistant")  # fmt: skip
    output = ids_of(vocab, "<think> w1 w2 w3 </think> the sum is w7 <|im_end|>")
    write_jsonl(root / "B1" / "prompts.jsonl", [{"id": "q1", "messages": CHAT}])
    write_jsonl(root / "B1" / "raw_responses.jsonl",
                [response("q1", output, prompt_tokens=len(sent))])  # fmt: skip
    return sent, output


@pytest.mark.slow
def test_a_template_that_drops_the_think_markers_is_caught_by_the_round_trip(
    tmp_path: Path,
) -> None:
    vocab = build_think_tokenizer(tmp_path / "keeps", KEEPS_TURNS)
    build_think_tokenizer(tmp_path / "drops", DROPS_TURNS)
    sent, output = _think_dataset(tmp_path / "datasets", vocab)

    good = export(
        tmp_path / "datasets", tmp_path / "keeps", tmp_path / "good", "--chat-template", "lfm"
    )
    bad = export(
        tmp_path / "datasets", tmp_path / "drops", tmp_path / "bad", "--chat-template", "lfm"
    )

    assert good.returncode == 0, good.stderr
    assert "1 of 1 conversations (100.00%) train in SpecForge on exactly" in good.stderr
    assert len(read_jsonl(tmp_path / "good" / "B1" / "conversations" / "specforge.jsonl")) == 1
    assert bad.returncode == 1
    assert "ROUND TRIP FAILED" in bad.stderr
    assert "train from ids.jsonl" in bad.stderr
    trip = json.loads((tmp_path / "bad" / "B1" / "quality.json").read_text())["roundtrip"]
    assert (trip["checked"], trip["matched"], trip["flagged"]) == (1, 0, True)
    first = trip["examples"][0]
    assert first["position"] == len(sent)  # the <think> the model wrote, dropped by the template
    assert first["reason"] == "the answer renders to other ids than were generated"
    assert first["expected"][4:8] == ["<think>", "w1", "w2", "w3"]
    assert first["rendered"][4:6] == ["the", "sum"]
    assert not read_jsonl(tmp_path / "bad" / "B1" / "conversations" / "specforge.jsonl")
    assert "ROUND TRIP FAILED" in (tmp_path / "bad" / "export_report.md").read_text()
    # the ids form is exact either way
    for out in ("good", "bad"):
        row = read_jsonl(tmp_path / out / "B1" / "ids" / "ids.jsonl")[0]
        assert row["input_ids"] == sent + output


def _quality_dataset(root: Path, vocab: dict[str, int]) -> None:
    """One of each: fine, length-capped, unclosed, looping, empty, and the file's own faults."""
    prompts = [{"id": key, "messages": CHAT} for key in ("ok", "capped", "open", "loop", "empty")]
    prompts += [{"id": "unanswered", "messages": CHAT}, {"id": "moved", "messages": CHAT}]
    answers = {
        "ok": ("w1 </think> the sum <|im_end|>", "stop"),
        "capped": ("w1 w2 w3 w4", "length"),
        "open": ("w1 w2 the answer <|im_end|>", "stop"),
        "loop": ("w1 </think> " + "w5 w6 w7 " * 40 + "<|im_end|>", "stop"),
        "empty": ("<|im_end|>", "stop"),
    }
    responses = [
        response(key, ids_of(vocab, text), finish) for key, (text, finish) in answers.items()
    ]
    responses += [
        response("ok", ids_of(vocab, "w9 <|im_end|>")),  # a second answer to the same prompt
        response("stranger", ids_of(vocab, "w1 <|im_end|>")),  # no prompt has this id
        response("moved", ids_of(vocab, "w1 <|im_end|>"), prompt_tokens=3),  # not what was sent
    ]
    write_jsonl(root / "B1" / "prompts.jsonl", prompts)
    write_jsonl(root / "B1" / "raw_responses.jsonl", responses)
    with (root / "B1" / "raw_responses.jsonl").open("a") as handle:
        handle.write("not a response at all\n")


def test_quality_counts_every_kind_of_answer_and_drop_leaves_them_out(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    _quality_dataset(tmp_path / "datasets", vocab)
    common = ["--datasets-root", str(tmp_path / "datasets"), "--tokenizer", str(tmp_path / "tok")]

    assert main([*common, "--out", str(tmp_path / "all")]) == 0
    assert (
        main([*common, "--out", str(tmp_path / "kept"), "--drop", "truncated,unclosed,looping"])
        == 0
    )

    report = json.loads((tmp_path / "all" / "B1" / "quality.json").read_text())
    quality = report["quality"]
    assert (quality["answers"], quality["truncated"], quality["looping"], quality["empty"]) == (
        5,
        1,
        1,
        1,
    )
    assert quality["finish_reasons"] == {"stop": 4, "length": 1}
    assert quality["reasoning"] == {"closed": 2, "unclosed": 3}  # capped, open, empty
    assert quality["looping_examples"] == ["loop"]
    assert report["duplicates_skipped"] == 1
    assert report["unanswered_prompts"] == 1
    assert report["no_prompt"]["count"] == 1
    assert report["no_prompt"]["first"].startswith("stranger")
    assert report["prompt_mismatch"]["count"] == 1
    assert report["corrupt_lines"] == 1
    assert report["conversations_left_out"] == {}  # no --chat-template: no conversation form
    assert report["ids_lines"] == 5
    assert report["conversation_lines"] == 0
    assert sum(quality["length_counts"]) == 5
    kept = json.loads((tmp_path / "kept" / "B1" / "quality.json").read_text())
    assert kept["quality"]["dropped"] == {"truncated": 1, "unclosed": 3, "looping": 1}
    assert kept["quality"]["dropped_answers"] == 4
    assert [row["id"] for row in read_jsonl(tmp_path / "kept" / "B1" / "ids" / "ids.jsonl")] == [
        "ok"
    ]
    markdown = (tmp_path / "all" / "B1" / "quality.md").read_text()
    assert "| looping | 1 (20.0%) |" in markdown


def test_merged_files_repeat_each_dataset_by_its_weight(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    # a prompt of each dataset's own: one that two datasets share is trained on once
    other = [CHAT[0], {"role": "user", "content": "why is the answer"}]
    for name, count, chat in (("B1", 3, CHAT), ("B2", 40, other)):
        keys = [f"{name}-{i}" for i in range(count)]
        write_jsonl(
            tmp_path / "d" / name / "prompts.jsonl", [{"id": k, "messages": chat} for k in keys]
        )
        write_jsonl(tmp_path / "d" / name / "raw_responses.jsonl",
                    [response(k, ids_of(vocab, "w1 </think> w2 <|im_end|>")) for k in keys])  # fmt: skip
    argv = ["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
            "--weights", "B1=2,B2=0.5", "--chat-template", "lfm"]  # fmt: skip

    assert main([*argv, "--out", str(tmp_path / "o1")]) == 0
    assert main([*argv, "--out", str(tmp_path / "o2")]) == 0

    merged = [row["id"] for row in read_jsonl(tmp_path / "o1" / "all" / "ids" / "ids.jsonl")]
    from_b1 = [m for m in merged if m.startswith("B1/")]
    from_b2 = [m for m in merged if m.startswith("B2/")]
    assert sorted(from_b1) == sorted(
        [f"B1/B1-{i}" for i in range(3)] + [f"B1/B1-{i}#2" for i in range(3)]
    )
    assert 10 <= len(from_b2) <= 30
    assert len(set(from_b2)) == len(from_b2)
    assert merged == [
        row["id"] for row in read_jsonl(tmp_path / "o2" / "all" / "ids" / "ids.jsonl")
    ]
    assert len(read_jsonl(tmp_path / "o1" / "all" / "conversations" / "specforge.jsonl")) == len(
        merged
    )
    summary = json.loads((tmp_path / "o1" / "export_report.json").read_text())
    assert summary["merged"]["records_per_dataset"] == {"B1": 6, "B2": len(from_b2)}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--drop", "truncated,sloppy"], "--drop 'sloppy' is not one of truncated"),
        (["--weights", "B1=heavy"], "--weights 'B1=heavy': give NAME=W"),
        (["--weights", "B9=2"], "--weights names 'B9', which is not a dataset"),
        (["--datasets", "B9"], "no dataset 'B9' under"),
        (["--formats", "parquet"], "--formats 'parquet' is not one of ids, conversations"),
        (["--min-roundtrip-share", "99"], "--min-roundtrip-share 99 must be between 0 and 1"),
    ],
)
def test_a_wrong_flag_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": "a", "input_ids": [1, 2]}])
    code = main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "none"),
                 "--out", str(tmp_path / "o"), *args])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_tokenizer_or_a_repeated_prompt_id_stops_the_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_think_tokenizer(tmp_path / "tok")
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl",
                [{"id": "a", "input_ids": [1, 2]}, {"id": "b", "input_ids": [3]}, {"id": "a", "input_ids": [4]}])  # fmt: skip
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl", [response("a", [7, 8])])
    argv = ["--datasets-root", str(tmp_path / "d"), "--out", str(tmp_path / "o")]

    assert main([*argv, "--tokenizer", str(tmp_path / "nowhere")]) == 2
    assert "tokenizer path" in capsys.readouterr().err
    assert main([*argv, "--tokenizer", str(tmp_path / "tok")]) == 1
    err = capsys.readouterr().err
    assert "line 3: duplicate id 'a' (first at line 1)" in err
    assert not (tmp_path / "o" / "B1" / "ids" / "ids.jsonl").exists()
    assert not list((tmp_path / "o").glob("**/*.partial"))
    assert not list((tmp_path / "o").glob(".export-index-*"))


def test_a_torn_record_glued_to_a_complete_one_gives_up_the_complete_one(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok")
    write_jsonl(
        tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": k, "messages": CHAT} for k in "ab"]
    )
    good = json.dumps(response("b", ids_of(vocab, "w1 </think> w2 <|im_end|>")))
    (tmp_path / "d" / "B1" / "raw_responses.jsonl").write_text(
        '{"id": "a", "output_ids": [1, 2' + good + "\n"
    )

    assert main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(tmp_path / "o")]) == 0  # fmt: skip

    report = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    assert (report["glued_lines"], report["unanswered_prompts"]) == (1, 1)
    assert [row["id"] for row in read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")] == ["b"]


def test_an_id_beyond_the_vocabulary_is_left_out_and_named(tmp_path: Path) -> None:
    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    size = len(vocab)
    write_jsonl(
        tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": k, "messages": CHAT} for k in "abc"]
    )
    fine = ids_of(vocab, "w1 </think> w2 <|im_end|>")
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl",
                [response("a", fine), response("b", [*fine[:2], size]), response("c", [10**7, 5])])  # fmt: skip

    assert main(["--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
                 "--out", str(tmp_path / "o"), "--chat-template", "lfm"]) == 0  # fmt: skip

    report = json.loads((tmp_path / "o" / "B1" / "quality.json").read_text())
    assert report["out_of_vocab"]["count"] == 2
    assert (
        report["out_of_vocab"]["first"]
        == f"b: token id {size} is not below the tokenizer's {size:,}"
    )
    assert [row["id"] for row in read_jsonl(tmp_path / "o" / "B1" / "ids" / "ids.jsonl")] == ["a"]
    assert [
        row["id"] for row in read_jsonl(tmp_path / "o" / "B1" / "conversations" / "specforge.jsonl")
    ] == ["a"]
