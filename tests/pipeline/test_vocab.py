"""The draft vocabulary: invariants with real torch, SpecForge's and speculators' load paths, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.simulator_process import agent_env

V, K = 50, 8


def write_responses(folder: Path, rows: list[list[int]], torn: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"id": f"r{i}", "output_ids": ids, "completion_tokens": len(ids)})
        for i, ids in enumerate(rows)
    ]
    (folder / "raw_responses.jsonl").write_text("".join(line + "\n" for line in lines) + torn)


def run_vocab(root: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.pipeline.vocab", "--datasets-root", str(root), "--out", str(out), *args],
        env=agent_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_mapping_invariants_ties_and_coverage(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    # id 7: 5 times; ids 3 and 9: 3 times each; ids 1, 2, 4, 5, 6, 8 once; 40 and 41 twice.
    write_responses(
        root / "A",
        [[7, 7, 7, 3, 3, 9], [1, 2, 4, 40, 41]],
        torn='{"id": "r9", "output_ids": [49, 49',
    )
    write_responses(root / "B", [[7, 7, 3, 9, 9], [5, 6, 8, 40, 41]])
    bad_at = (root / "B" / "raw_responses.jsonl").stat().st_size
    with (root / "B" / "raw_responses.jsonl").open("a") as handle:
        handle.write('{"id": "bad", "output_ids": [1, "x"]}\n')  # corrupt: skipped and reported
        handle.write('{"id": "r0", "output_ids": [7, 7, 7]}\n')  # r0 again: counted once

    result = run_vocab(
        root, tmp_path / "out", "--target-vocab-size", str(V), "--draft-vocab-size", str(K)
    )

    assert result.returncode == 0, result.stderr
    mapping = torch.load(tmp_path / "out" / "vocab_mapping.pt")
    d2t, t2d = mapping["d2t"], mapping["t2d"]
    assert (d2t.dtype, d2t.shape, t2d.dtype, t2d.shape) == (torch.int64, (K,), torch.bool, (V,))
    assert int(t2d.sum()) == K
    selected = d2t + torch.arange(K)
    assert bool((selected[1:] > selected[:-1]).all())
    # 7, 3, 9, 40, 41 by count; then the count-1 ties go to the lower ids 1, 2, 4.
    assert selected.tolist() == [1, 2, 3, 4, 7, 9, 40, 41]
    assert torch.nonzero(t2d).flatten().tolist() == selected.tolist()
    report = json.loads((tmp_path / "out" / "vocab_report.json").read_text())
    assert report["tokens_per_dataset"] == {"A": 11, "B": 10}
    assert report["skipped_lines_per_dataset"] == {"A": 0, "B": 1}
    assert report["duplicate_lines_per_dataset"] == {"A": 0, "B": 1}
    assert (
        f"B: 10 tokens counted; skipped 1 corrupt line(s) (first at byte {bad_at}: output_ids "
        'holds "x", not a token id (an integer from 0)) and 1 repeated record id(s)'
        in result.stderr
    )
    assert report["distinct_ids_seen"] == 11
    assert report["coverage"] == pytest.approx(18 / 21)  # all but 5, 6 and 8 (one each)
    freq = torch.load(tmp_path / "out" / "token_freq.pt")  # speculators' {token_id: count}
    assert freq[7] == 5
    assert 49 not in freq, "the torn last line is not counted"
    assert sum(freq.values()) == 21


def test_specforge_and_speculators_load_paths(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    write_responses(root / "A", [[10, 11, 12, 10, 30, 31]])
    assert (
        run_vocab(
            root, tmp_path / "out", "--target-vocab-size", str(V), "--draft-vocab-size", "4"
        ).returncode
        == 0
    )

    # SpecForge: buffers initialised as ones/zeros, then copied from the .pt; predictions map back.
    t2d_buffer, d2t_buffer = torch.ones(V, dtype=torch.bool), torch.zeros(4, dtype=torch.int64)
    loaded = torch.load(tmp_path / "out" / "vocab_mapping.pt")
    t2d_buffer.copy_(loaded["t2d"])
    d2t_buffer.copy_(loaded["d2t"])
    draft_predictions = torch.arange(4)
    assert (draft_predictions + d2t_buffer[draft_predictions]).tolist() == [10, 11, 12, 30]
    # SGLang's loader: hot_token_id = d2t + arange(len(d2t)).
    assert (d2t_buffer + torch.arange(len(d2t_buffer))).tolist() == [10, 11, 12, 30]
    # speculators: numpy arrays with the same offset convention.
    d2t_np, t2d_np = np.load(tmp_path / "out" / "d2t.npy"), np.load(tmp_path / "out" / "t2d.npy")
    assert d2t_np.tolist() == d2t_buffer.tolist()
    assert t2d_np.dtype == np.bool_
    assert np.flatnonzero(t2d_np).tolist() == [10, 11, 12, 30]


def test_fewer_seen_than_k_pads_with_unseen_ids_in_id_order(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    write_responses(root / "A", [[20, 20, 5]])
    assert (
        run_vocab(
            root, tmp_path / "out", "--target-vocab-size", str(V), "--draft-vocab-size", "5"
        ).returncode
        == 0
    )
    d2t = torch.load(tmp_path / "out" / "vocab_mapping.pt")["d2t"]
    assert (d2t + torch.arange(5)).tolist() == [0, 1, 2, 5, 20]


@pytest.mark.parametrize(
    ("rows", "args", "fragment", "code"),
    [
        (
            [[1, 2]],
            ("--target-vocab-size", "50", "--draft-vocab-size", "60"),
            "must be between 1 and the target vocab size 50",
            2,
        ),
        (
            [[1, 99]],
            ("--target-vocab-size", "50", "--draft-vocab-size", "4"),
            "token id 99 is not below the target vocab size 50",
            1,
        ),
        ([], ("--target-vocab-size", "50", "--draft-vocab-size", "4"), "A: no output ids", 1),
        (
            [[1]],
            ("--draft-vocab-size", "4"),
            "give --target-vocab-size, --tokenizer or --model-config",
            2,
        ),
    ],
)
def test_bad_input_is_one_clear_line(
    tmp_path: Path, rows: list[list[int]], args: tuple[str, ...], fragment: str, code: int
) -> None:
    write_responses(tmp_path / "datasets" / "A", rows)
    result = run_vocab(tmp_path / "datasets", tmp_path / "out", *args)
    assert result.returncode == code
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_vocab_size_from_a_model_config(tmp_path: Path) -> None:
    write_responses(tmp_path / "datasets" / "A", [[1, 2, 3]])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"vocab_size": 64}))
    result = run_vocab(
        tmp_path / "datasets",
        tmp_path / "out",
        "--model-config",
        str(config),
        "--draft-vocab-size",
        "4",
    )
    assert result.returncode == 0, result.stderr
    assert (
        json.loads((tmp_path / "out" / "vocab_report.json").read_text())["target_vocab_size"] == 64
    )
