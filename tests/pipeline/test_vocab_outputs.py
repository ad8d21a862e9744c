"""The files are checked before they are put in place: a refused mapping is never written.

A wrong mapping is made by swapping the job's selection for a broken one (the only way to get
one out of a correct job); the files of an earlier good run must stay as they were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agent.pipeline.vocab.__main__ as vocab_job
from agent.pipeline.vocab.check import refusals
from agent.pipeline.vocab.outputs import REPORT, STAGING

V, K = 32, 4
FILES = {
    "vocab_mapping.pt", "d2t.npy", "t2d.npy", f"d2t-{K}.npy", f"t2d-{K}.npy",
    f"speculative_token_map-{K}.pt", "token_freq.pt", REPORT,
}  # fmt: skip


def good(selected: list[int], vocab: int = V) -> tuple[Any, Any]:
    ids = np.array(selected, dtype=np.int64)
    t2d = np.zeros(vocab, dtype=np.bool_)
    t2d[ids] = True
    return ids - np.arange(ids.size, dtype=np.int64), t2d


def test_a_good_mapping_has_no_refusal() -> None:
    assert refusals(*good([0, 5, 6, 31]), V, K) == []


@pytest.mark.parametrize(
    ("arrays", "fragment"),
    [
        (good([0, 5, 6, 29], vocab=30), "t2d is bool[30], not bool[32]"),
        ((good([0, 5, 6, 31])[0], good([0, 5, 6, 31])[1].astype(np.uint8)), "t2d is uint8[32]"),
        ((good([0, 5, 6])[0], good([0, 5, 6])[1]), "d2t is int64[3], not int64[4]"),
        ((good([0, 5, 6, 31])[0].astype(np.int32), good([0, 5, 6, 31])[1]), "d2t is int32[4]"),
        ((np.array([0, 4, 4, 29]), good([0, 5, 6, 31])[1]), "d2t maps draft ids to target ids "
         "outside 0..31"),
        ((np.array([0, 4, 4, -4]), good([0, 5, 6, 31])[1]), "outside 0..31"),
        ((good([0, 5, 6, 30])[0], good([0, 5, 6, 31])[1]), "t2d marks 4 ids, not the 4 ids d2t "
         "maps to, in order"),
        ((good([0, 5, 6, 31])[0], good([0, 5, 6, 30, 31])[1]), "t2d marks 5 ids"),
        ((np.array([6, 4, -1, 28]), good([0, 5, 6, 31])[1]), "not the 4 ids d2t maps to, in order"),
    ],
)  # fmt: skip
def test_what_a_trainer_would_refuse_is_named(arrays: tuple[Any, Any], fragment: str) -> None:
    problems = refusals(*arrays, V, K)
    assert any(fragment in problem for problem in problems), problems


def write_responses(root: Path) -> None:
    (root / "A").mkdir(parents=True)
    (root / "A" / "raw_responses.jsonl").write_text(
        json.dumps({"id": "r0", "output_ids": [1, 2, 2, 3, 9, 9, 9]}) + "\n"
    )


def run(root: Path, out: Path) -> int:
    return vocab_job.main(["--datasets-root", str(root), "--out", str(out), "--target-vocab-size",
                           str(V), "--draft-vocab-size", str(K)])  # fmt: skip


def test_every_file_is_put_in_place_with_its_name_and_the_report_lists_them(
    tmp_path: Path,
) -> None:
    write_responses(tmp_path / "datasets")

    assert run(tmp_path / "datasets", tmp_path / "out") == 0

    assert {path.name for path in (tmp_path / "out").iterdir()} == FILES
    listed = json.loads((tmp_path / "out" / REPORT).read_text())["files"]
    assert set(listed) == FILES - {REPORT}
    assert np.load(tmp_path / "out" / f"d2t-{K}.npy").tolist() == [1, 1, 1, 6]


@pytest.mark.parametrize("broken", ["short t2d", "t2d of another draft"])
def test_a_mapping_a_trainer_would_refuse_is_never_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    broken: str,
) -> None:
    write_responses(tmp_path / "datasets")
    assert run(tmp_path / "datasets", tmp_path / "out") == 0
    before = {path.name: path.read_bytes() for path in (tmp_path / "out").iterdir()}
    select = vocab_job.select

    def broken_select(counts: Any, draft: int) -> tuple[Any, Any, Any]:
        d2t, t2d, selected = select(counts, draft)
        if broken == "short t2d":
            return d2t, t2d[:-1], selected  # sized by a shorter vocabulary than the model's
        return d2t, np.roll(t2d, 1), selected

    monkeypatch.setattr(vocab_job, "select", broken_select)
    (tmp_path / "datasets" / "A" / "raw_responses.jsonl").write_text(
        json.dumps({"id": "r0", "output_ids": [7, 7, 8]}) + "\n"
    )

    assert run(tmp_path / "datasets", tmp_path / "out") == 1

    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"vocab: not written: a trainer would refuse d2t.npy/t2d.npy for V = {V}")
    after = {path.name: path.read_bytes() for path in (tmp_path / "out").iterdir()}
    assert after == before
    assert not (tmp_path / "out" / STAGING).exists()
