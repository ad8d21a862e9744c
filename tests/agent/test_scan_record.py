"""A kept scan's bytes read back as they were written, whatever the ids hold; damage is refused."""

from __future__ import annotations

import pytest

from agent.datasets.kept_scan import KeptScan, KeptScanError
from agent.watch.scan_record import decode, encode

CODE = "code-1"


def record(ids: list[str]) -> KeptScan:
    counts: dict[str, int | str | list[int]] = {"responses": 3, "reason": "x", "at": [1, 2]}
    return KeptScan("/d/raw_responses.jsonl", 1, 2, 300, "c" * 32, counts, "seen_ids", ids)


@pytest.mark.parametrize(
    "ids",
    [[], [""], ["p1", "p2"], ["a\nb", "c"], ["\ud800 lone", "é", '"quoted"'], ["x\r", "y"]],
)
def test_ids_of_any_text_read_back_as_written(ids: list[str]) -> None:
    kept = decode(encode(record(ids), CODE), CODE)
    assert kept.ids == set(ids)
    assert (kept.offset, kept.counts, kept.ids_field) == (300, record(ids).counts, "seen_ids")


def test_a_record_of_other_code_is_refused() -> None:
    with pytest.raises(KeptScanError, match="another version"):
        decode(encode(record(["p1"]), CODE), "code-2")


@pytest.mark.parametrize("cut", [1, 10, 100])
def test_a_cut_record_is_refused(cut: int) -> None:
    data = encode(record([f"p{i}" for i in range(50)]), CODE)
    with pytest.raises(KeptScanError):
        decode(data[:-cut], CODE)
