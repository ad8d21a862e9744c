"""V comes from the model's config.json, padding and all; every wrong pairing is refused in a line.

The tokenizer is a small word-level one the tests build (58 ids); the config.json beside it or
named states a padded vocab_size (64), as Qwen3-8B's does (151,936 for a shorter tokenizer).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.pipeline.vocab.__main__ import main
from agent.pipeline.vocab.config import MAX_CONFIG_BYTES
from agent.pipeline.vocab.errors import VocabUsageError
from agent.pipeline.vocab.target import VocabAsked, resolve_target_vocab
from tests.support.export_data import build_think_tokenizer

TOKENIZER_IDS, PADDED_V, K = 58, 64, 8


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 58-id tokenizer folder with no config.json: each test copies it and adds its own."""
    folder = tmp_path_factory.mktemp("models") / "tok"
    assert len(build_think_tokenizer(folder)) == TOKENIZER_IDS
    return folder


def model_folder(tmp_path: Path, tokenizer: Path, config: dict[str, Any] | None) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(tokenizer, folder)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def datasets(tmp_path: Path) -> Path:
    root = tmp_path / "datasets"
    (root / "A").mkdir(parents=True)
    rows = [[3, 4, 4, 5, 57, 57, 57], [10, 11, 12, 13, 14, 3]]
    lines = [json.dumps({"id": f"r{i}", "output_ids": ids}) for i, ids in enumerate(rows)]
    (root / "A" / "raw_responses.jsonl").write_text("".join(line + "\n" for line in lines))
    return root


def run(tmp_path: Path, *args: str) -> int:
    return main(["--datasets-root", str(datasets(tmp_path)), "--out", str(tmp_path / "out"),
                 "--draft-vocab-size", str(K), *args])  # fmt: skip


def report(tmp_path: Path) -> dict[str, Any]:
    return dict(json.loads((tmp_path / "out" / "vocab_report.json").read_text()))


@pytest.mark.slow
def test_a_padded_config_beside_the_tokenizer_sizes_t2d_and_the_padding_is_reported(
    tmp_path: Path, tokenizer: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = model_folder(tmp_path, tokenizer, {"vocab_size": PADDED_V, "hidden_size": 16})

    assert run(tmp_path, "--tokenizer", str(model)) == 0

    said = report(tmp_path)
    assert (said["target_vocab_size"], said["tokenizer_vocab_size"], said["padding_ids"]) == (
        PADDED_V, TOKENIZER_IDS, PADDED_V - TOKENIZER_IDS,
    )  # fmt: skip
    assert said["target_vocab_source"] == f"vocab_size 64 in {model / 'config.json'}"
    for name in ("t2d.npy", f"t2d-{K}.npy"):
        assert np.load(tmp_path / "out" / name).shape == (PADDED_V,)
    stderr = capsys.readouterr().err
    assert "vocab: V = 64 (vocab_size 64 in " in stderr
    assert "the tokenizer has 58 ids, so t2d holds 6 padding ids past them" in stderr


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"vocab_size": PADDED_V}, PADDED_V),
        ({"text_config": {"vocab_size": PADDED_V}, "vision_config": {"hidden_size": 8}}, PADDED_V),
        # as both trainers read a multimodal config: text_config first
        ({"vocab_size": 60, "text_config": {"vocab_size": PADDED_V}}, PADDED_V),
        ({"text_config": {"hidden_size": 8}, "vocab_size": 60}, 60),
        ({"padded_vocab_size": PADDED_V, "vocab_size": None}, PADDED_V),
    ],
)
def test_a_named_config_gives_v_as_the_trainers_read_it(
    tmp_path: Path, config: dict[str, Any], expected: int
) -> None:
    named = tmp_path / "elsewhere.json"
    named.write_text(json.dumps(config))

    target = resolve_target_vocab(VocabAsked(model_config=named))

    assert (target.size, target.tokenizer_size, target.padding_ids) == (expected, None, None)


@pytest.mark.parametrize(
    ("config", "args", "fragment"),
    [
        (
            {"vocab_size": 50},
            (),
            "has 58 ids but V is 50 (vocab_size 50 in {config}): its ids from 50 up could not be "
            "mapped; name the config.json of this tokenizer's own model with --model-config PATH",
        ),
        (
            None,
            (),
            "no config.json beside the tokenizer in {model}: the trainers size t2d by the model's "
            "config.json vocab_size, often padded past the tokenizer's length; give "
            "--model-config PATH to the target model's config.json, or --target-vocab-size N",
        ),
        (
            {"vocab_size": PADDED_V},
            ("--target-vocab-size", "58"),
            "--target-vocab-size 58 differs from vocab_size 64 in {config}: the trainers size "
            "t2d by the config",
        ),
        (
            None,
            ("--target-vocab-size", "40"),
            "has 58 ids but V is 40 (--target-vocab-size, no config.json to check it against)",
        ),
        (
            {"vocab_size": 60, "padded_vocab_size": PADDED_V},
            (),
            "vocab_size 60 and padded_vocab_size 64 in {config} differ: SpecForge sizes t2d by "
            "padded_vocab_size, speculators by vocab_size; give --target-vocab-size N",
        ),
    ],
)
def test_a_size_a_trainer_would_refuse_is_refused_before_anything_is_written(
    tmp_path: Path,
    tokenizer: Path,
    capsys: pytest.CaptureFixture[str],
    config: dict[str, Any] | None,
    args: tuple[str, ...],
    fragment: str,
) -> None:
    model = model_folder(tmp_path, tokenizer, config)

    assert run(tmp_path, "--tokenizer", str(model), *args) == 2

    err = capsys.readouterr().err
    assert fragment.format(model=model, config=model / "config.json") in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("config", "size"),
    [
        ({"vocab_size": 60, "padded_vocab_size": PADDED_V}, PADDED_V),
        ({"vocab_size": 60, "padded_vocab_size": PADDED_V}, 60),
        ({"vocab_size": TOKENIZER_IDS}, TOKENIZER_IDS),
    ],
)
def test_the_sizes_the_refusals_point_to_are_taken(
    tmp_path: Path, tokenizer: Path, config: dict[str, Any], size: int
) -> None:
    """The other side of the refusals above: a size the config states is accepted."""
    model = model_folder(tmp_path, tokenizer, config)

    target = resolve_target_vocab(VocabAsked(size, tokenizer=str(model)))

    assert (target.size, target.padding_ids) == (size, size - TOKENIZER_IDS)
    assert target.source.startswith("--target-vocab-size, as ")
    assert target.source.endswith(f" in {model / 'config.json'}")


def deep_json(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: p.write_text("{vocab_size: 64}"), "is not valid JSON (Expecting property name"),
        (lambda p: p.write_text("[64]"), "holds a JSON list, not the object of a model's config"),
        (lambda p: p.write_text('{"vocab_size": "64"}'), "vocab_size is '64', not a whole number"),
        (lambda p: p.write_text('{"vocab_size": true}'), "vocab_size is True, not a whole number"),
        (lambda p: p.write_text('{"vocab_size": 64.5}'), "vocab_size is 64.5, not a whole number"),
        (lambda p: p.write_text('{"vocab_size": 0}'), "vocab_size is 0, not a whole number"),
        (lambda p: p.write_text('{"vocab_size": 1073741824}'), "from 1 to 16,777,216"),
        (lambda p: p.write_text('{"hidden_size": 8}'), "has no vocab_size (nor text_config"),
        (lambda p: p.write_bytes(b"{" + b" " * MAX_CONFIG_BYTES + b"}"), "over 4,194,304 bytes"),
        (lambda p: p.write_bytes(b'{"vocab_size": 64, "x": "\xff"}'), "is not valid JSON"),
        (deep_json, "is not valid JSON"),
        (fifo, "is a FIFO (named pipe), not a regular file"),
        (lambda p: p.mkdir(), "is a folder, not a regular file"),
        (lambda p: None, "No such file or directory"),
    ],
)
def test_a_hostile_config_is_one_line_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, fragment: str
) -> None:
    config = tmp_path / "config.json"
    make(config)

    assert run(tmp_path, "--model-config", str(config)) == 2

    err = capsys.readouterr().err
    assert fragment in err
    assert err.startswith("vocab: ")
    assert str(config) in err
    assert err.rstrip().endswith(
        "give --model-config PATH to the target model's config.json, or --target-vocab-size N"
    )
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("size", [0, -3, 2**24 + 1])
def test_a_target_vocab_size_out_of_range_is_a_usage_error(size: int) -> None:
    with pytest.raises(VocabUsageError, match=f"--target-vocab-size {size} must be a whole number"):
        resolve_target_vocab(VocabAsked(size))
