"""The vocab job counts what json.loads reads, at numpy's speed, with torch kept off that path.

Its counts, tokens, tallies and errors are compared with the same job with every fast reading
switched off (each line through json.loads and the record checks, as the definition says), and
its id parser with Python's own int(), on ids of every length.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent.datasets.response_lines as response_lines
import agent.pipeline.vocab.count as vocab_count
from agent.datasets.file_lines import LineBlock
from agent.pipeline.id_text import parse_ids
from agent.pipeline.vocab.count import LineTally, count_dataset
from agent.pipeline.vocab.errors import VocabError
from tests.support.response_line_strategies import any_line
from tests.support.simulator_process import agent_env

V = 120


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(st.integers(0, 99), st.integers(0, 10**8 - 1), st.integers(0, 10**12)), min_size=1
    )
)
def test_ids_parse_as_int_reads_them(ids: list[int]) -> None:
    text = ",".join(map(str, ids)).encode()
    assert parse_ids(text).tolist() == ids


def test_ids_at_the_edges_of_eight_digits() -> None:
    for ids in ([0], [7], [99_999_999], [100_000_000], [1, 0, 12345678, 0], [10**18]):
        assert parse_ids(",".join(map(str, ids)).encode()).tolist() == ids
    assert parse_ids(b"").tolist() == []


def every_line_bytes(block: bytes, block_offset: int) -> Iterator[tuple[int, bytes]]:
    for offset, line in LineBlock(block_offset, block).lines():
        if line.strip():
            yield offset, line


def counted(folder: Path, fast: bool = True) -> tuple[Any, ...]:
    counts, tally = np.zeros(V, dtype=np.int64), LineTally()
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(vocab_count, "scan_block", every_line_bytes)
            patch.setattr(response_lines, "_parse_fast", lambda line: None)
        try:
            total = count_dataset(folder, "raw_responses.jsonl", counts, tally)
        except VocabError as exc:
            return ("error", str(exc))
    return total, counts.tolist(), tally


def runner_line(rid: str, ids: list[int]) -> bytes:
    record = {"id": rid, "output_ids": ids, "completion_tokens": len(ids), "finish_reason": "stop"}
    return json.dumps(record, separators=(",", ":")).encode()


files = st.lists(
    st.one_of(
        any_line,
        st.builds(
            runner_line, st.sampled_from(["p1", "p2", "p3", "p4"]), st.lists(st.integers(0, V + 2))
        ),
    ),
    max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(files)
def test_the_counts_are_json_loads_counts(lines: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "raw_responses.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
        assert counted(Path(folder)) == counted(Path(folder), fast=False)


def test_a_large_file_counts_as_a_counter_of_json_loads(tmp_path: Path) -> None:
    """Many reads and parses of text: every id, each record id once, as Counter says."""
    rng, lines, expected = np.random.default_rng(1), [], Counter[int]()
    for index in range(2000):
        ids = rng.integers(0, V, int(rng.integers(0, 400))).tolist()
        lines.append(runner_line(f"r{index % 1500}", ids))
        expected.update(ids if index < 1500 else [])  # the last 500 repeat earlier record ids
    (tmp_path / "raw_responses.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    total, counts, tally = counted(tmp_path)
    assert counts == [expected[i] for i in range(V)]
    assert (total, tally.duplicates, tally.skipped) == (sum(expected.values()), 500, 0)


def test_an_id_outside_the_vocabulary_is_refused_as_before(tmp_path: Path) -> None:
    lines = [runner_line("a", [1, 2]), runner_line("b", [3, V + 5, 4]), runner_line("c", [V])]
    (tmp_path / "raw_responses.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    assert counted(tmp_path) == counted(tmp_path, fast=False)
    assert counted(tmp_path)[1] == (
        f"{tmp_path.name}: token id {V + 5} is not below the target vocab size {V}"
    )


def test_the_counting_process_never_imports_torch_and_torch_saves_the_pt_files(
    tmp_path: Path,
) -> None:
    """torch is imported by the saver process, beside the counting, and writes the .pt itself."""
    folder = tmp_path / "datasets" / "A"
    folder.mkdir(parents=True)
    (folder / "raw_responses.jsonl").write_bytes(runner_line("a", [1, 2, 2]) + b"\n")
    code = (
        "import sys; from agent.pipeline.vocab.__main__ import main; "
        f"code = main(['--datasets-root', {str(tmp_path / 'datasets')!r}, '--out', "
        f"{str(tmp_path / 'out')!r}, '--target-vocab-size', '8', '--draft-vocab-size', '2']); "
        "print(code, 'torch' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=agent_env(), capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == ["0", "False"], result.stderr
    import torch

    mapping = torch.load(tmp_path / "out" / "vocab_mapping.pt", weights_only=True)
    assert mapping["d2t"].tolist() == [1, 1]
    assert mapping["d2t"].dtype == torch.int64
    assert mapping["t2d"].tolist() == [False, True, True, False, False, False, False, False]
    assert torch.load(tmp_path / "out" / "token_freq.pt", weights_only=True) == {1: 1, 2: 2}
    assert not (tmp_path / "out" / ".token_freq.npz").exists()
