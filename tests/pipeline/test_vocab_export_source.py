"""Counting from the export's records, by choice: loss-masked ids, the export's drops and weights.

The export runs for real (`--weights B1=2 --drop truncated`) on answers whose counts are known,
so the expected frequencies come from the answers themselves, not from the file counted: B1's
kept answers twice, its truncated one never, B2's once.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from agent.pipeline.export.__main__ import main as export_main
from agent.pipeline.vocab.__main__ import main
from agent.pipeline.vocab.export import masked_ids, merged_ids_file
from tests.support.export_data import build_think_tokenizer, ids_of, response, write_jsonl

V, K = 64, 4
CHATS = {
    "B1": [{"role": "user", "content": "why is the sum"}],
    "B2": [{"role": "user", "content": "why is the answer"}],
}
"""A prompt of each dataset's own: one that two datasets share is trained on once, from the first."""
ANSWERS = {
    "B1": {"a": ("w1 w1 w2 <|im_end|>", "stop"), "b": ("w30 w30 w30 w30 w30", "length"),
           "c": ("w2 w3 <|im_end|>", "stop")},
    "B2": {"x": ("w5 w6 <|im_end|>", "stop"), "y": ("w7 <|im_end|>", "stop")},
}  # fmt: skip
WEIGHTS = {"B1": 2, "B2": 1}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A finished export and the tokenizer's vocabulary (token -> id), 58 ids under V = 64."""
    base = tmp_path_factory.mktemp("export")
    vocab = build_think_tokenizer(base / "model")
    (base / "model" / "config.json").write_text(json.dumps({"vocab_size": V}))
    for name, answers in ANSWERS.items():
        prompts = [{"id": key, "messages": CHATS[name]} for key in answers]
        write_jsonl(base / "d" / name / "prompts.jsonl", prompts)
        lines = [response(key, ids_of(vocab, text), end) for key, (text, end) in answers.items()]
        write_jsonl(base / "d" / name / "raw_responses.jsonl", lines)
    argv = ["--datasets-root", str(base / "d"), "--tokenizer", str(base / "model"),
            "--out", str(base / "export"), "--weights", "B1=2", "--drop", "truncated"]  # fmt: skip
    assert export_main(argv) == 0
    return {"base": base, "vocab": vocab}


def expected_counts(
    vocab: dict[str, int], datasets: tuple[str, ...] = ("B1", "B2")
) -> Counter[int]:
    """What the trainer is given: each kept answer's ids, times its dataset's weight."""
    counts: Counter[int] = Counter()
    for name in datasets:
        for text, finish in ANSWERS[name].values():
            if finish != "length":
                counts.update(ids_of(vocab, text) * WEIGHTS[name])
    return counts


def copied_export(exported: dict[str, Any], tmp_path: Path) -> Path:
    shutil.copytree(exported["base"] / "export", tmp_path / "export")
    return tmp_path / "export"


def run(exported: dict[str, Any], tmp_path: Path, *source: str) -> int:
    return main([*source, "--tokenizer", str(exported["base"] / "model"), "--draft-vocab-size",
                 str(K), "--out", str(tmp_path / "out")])  # fmt: skip


def report(tmp_path: Path) -> dict[str, Any]:
    return dict(json.loads((tmp_path / "out" / "vocab_report.json").read_text()))


def selected(tmp_path: Path) -> list[int]:
    d2t = torch.load(tmp_path / "out" / "vocab_mapping.pt", weights_only=True)["d2t"]
    return list((d2t + torch.arange(K)).tolist())


def top_k(counts: Counter[int]) -> list[int]:
    return sorted(sorted(counts, key=lambda token: (-counts[token], token))[:K])


def test_the_export_source_counts_what_the_trainer_is_given_and_says_so(
    exported: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export_dir = exported["base"] / "export"
    assert run(exported, tmp_path, "--export-dir", str(export_dir)) == 0

    vocab, said = exported["vocab"], report(tmp_path)
    expected = expected_counts(vocab)
    assert torch.load(tmp_path / "out" / "token_freq.pt", weights_only=True) == dict(expected)
    assert selected(tmp_path) == top_k(expected)
    assert vocab["w30"] not in selected(tmp_path)  # the truncated answer was dropped
    assert said["counted_from"] == "export"
    assert said["counted_path"] == str(merged_ids_file(export_dir))
    assert said["tokens_per_dataset"] == {"B1": 14, "B2": 5}
    assert said["export_applied"] == {"drop": ["truncated"], "weights": {"B1": 2.0}}
    assert (said["skipped_lines"], said["duplicate_lines"], said["target_vocab_size"]) == (0, 0, V)
    assert "of 19 loss-masked tokens of the export's merged records (its drops and weights " \
        "applied); V 64; wrote" in capsys.readouterr().err  # fmt: skip


def test_the_responses_source_counts_every_answer_once_and_says_so(
    exported: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default, for contrast: the truncated answer counts and weights do not apply."""
    assert run(exported, tmp_path, "--datasets-root", str(exported["base"] / "d")) == 0

    vocab, said = exported["vocab"], report(tmp_path)
    assert said["counted_from"] == "responses"
    assert said["tokens_per_dataset"] == {"B1": 12, "B2": 5}
    assert vocab["w30"] in selected(tmp_path)
    assert "of 17 output tokens of the runner's responses; V 64" in capsys.readouterr().err


def test_a_corrupt_or_repeated_row_is_tallied_and_the_datasets_filter_applies(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    export_dir = copied_export(exported, tmp_path)
    merged = merged_ids_file(export_dir)
    first_b2 = next(
        line for line in merged.read_text().splitlines() if line.startswith('{"id":"B2/')
    )
    with merged.open("a") as handle:
        handle.write('{"id":"B2/z","input_ids":[5,true],"loss_mask":[1,1]}\n' + first_b2 + "\n")

    assert run(exported, tmp_path, "--export-dir", str(export_dir), "--datasets", "B2") == 0

    said = report(tmp_path)
    assert said["tokens_per_dataset"] == {"B2": 5}
    assert (said["skipped_lines"], said["duplicate_lines"]) == (1, 1)
    freq = torch.load(tmp_path / "out" / "token_freq.pt", weights_only=True)
    assert freq == dict(expected_counts(exported["vocab"], ("B2",)))


@pytest.mark.parametrize(
    ("change", "source", "code", "fragment"),
    [
        ("no report", (), 2, "no finished export in {export} (export_report.json is missing): "
         "run the export to its end first, or count the runner's responses with --datasets-root"),
        ("ids form missing", (), 2, "the export in {export} wrote no ids.jsonl (formats "
         "['conversations'])"),
        ("id past V", (), 1, "record B2/far: token id 64 is not below the target vocab size 64"),
        (None, ("--datasets", "B3"), 1, "no records of dataset 'B3' in"),
        (None, ("--datasets-root", "{export}"), 2, "give --datasets-root DIR (count the runner's "
         "responses) or --export-dir OUT (count the export's records, its drops and weights "
         "applied), one of the two"),
    ],
)  # fmt: skip
def test_an_export_that_cannot_be_counted_is_one_line(
    exported: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    change: str | None, source: tuple[str, ...], code: int, fragment: str,
) -> None:  # fmt: skip
    export_dir = copied_export(exported, tmp_path)
    report_file = export_dir / "export_report.json"
    if change == "no report":
        report_file.unlink()
    if change == "ids form missing":
        report_file.write_text(
            json.dumps(json.loads(report_file.read_text()) | {"formats": ["conversations"]})
        )
    if change == "id past V":
        with merged_ids_file(export_dir).open("a") as handle:
            handle.write('{"id":"B2/far","input_ids":[1,64],"loss_mask":[0,1]}\n')
    args = [arg.format(export=export_dir) for arg in source]

    assert run(exported, tmp_path, "--export-dir", str(export_dir), *args) == code

    err = capsys.readouterr().err.splitlines()
    assert fragment.format(export=export_dir) in err[-1]
    assert not (tmp_path / "out").exists()


def test_neither_source_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--target-vocab-size", "64", "--out", str(tmp_path / "out")]) == 2
    assert "give --datasets-root DIR (count the runner's responses) or --export-dir OUT" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"id":"B1/a","input_ids":[7,8,9,10],"loss_mask":[0,1,0,1]}', ("B1/a", [8, 10])),
        (b'{"id": "B1/a#2", "loss_mask": [1], "input_ids": [0], "x": 1}', ("B1/a#2", [0])),
        (b'{"id":"B1/a","input_ids":[],"loss_mask":[]}', ("B1/a", [])),
        (b'{"id":"B1/a","input_ids":[7,true],"loss_mask":[1,1]}', "other than integers"),
        (b'{"id":"B1/a","input_ids":[7,8.0],"loss_mask":[1,1]}', "other than integers"),
        (b'{"id":"B1/a","input_ids":[7,8],"loss_mask":[1,true]}', "other than integers"),
        (b'{"id":"B1/a","input_ids":[7,-8],"loss_mask":[1,1]}', "a negative id"),
        (b'{"id":"B1/a","input_ids":[7,99999999999999999999],"loss_mask":[1,1]}', "too large"),
        (b'{"id":"B1/a","input_ids":[7,8],"loss_mask":[1,2]}', "other than 0 and 1"),
        (b'{"id":"B1/a","input_ids":[7,8],"loss_mask":[1]}', "two lists of one length"),
        (b'{"id":"B1/a","input_ids":[[7],[8]],"loss_mask":[1,1]}', "other than integers"),
        (b'{"id":"a","input_ids":[7],"loss_mask":[1]}', "is not NAME/ID"),
        (b'{"id":"/a","input_ids":[7],"loss_mask":[1]}', "is not NAME/ID"),
        (b'{"id":5,"input_ids":[7],"loss_mask":[1]}', "not an object with a string id"),
        (b'["B1/a",[7],[1]]', "not an object with a string id"),
        (b'{"id":"B1/a","input_ids":[7', "not JSON"),
    ],
)
def test_an_export_row_is_read_by_its_definition(line: bytes, expected: Any) -> None:
    row = masked_ids(line)
    if isinstance(expected, str):
        assert isinstance(row, str)
        assert expected in row
    else:
        assert isinstance(row, tuple)
        assert (row[0], row[1].tolist(), str(row[1].dtype)) == (*expected, "int64")
