"""The encoding memo: unchanged objects reused, changed ones never served in an old form."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import pytest

from agent.protocol import (
    Event,
    Response,
    WireMemo,
    encode,
    encode_result,
    encoding,
    to_wire,
)
from tests.support.golden_results import DATASET, SNAPSHOT


def test_a_memo_reuses_unchanged_objects_and_never_an_old_form_of_a_new_one() -> None:
    memo = WireMemo()
    first = encode(Event("snapshot", SNAPSHOT), memo)
    changed = replace(SNAPSHOT, datasets=(replace(DATASET, tokens=4001), DATASET))
    second = encode(Event("snapshot", changed), memo)
    assert encode(Event("snapshot", SNAPSHOT), memo) == first
    assert second == encode(Event("snapshot", changed))
    assert b'"tokens":4001' in second


def test_a_memo_writes_the_very_line_json_dumps_writes() -> None:
    memo = WireMemo()
    odd = replace(
        DATASET, name="B2_ünïcode \"quoted\"\n", tokens_per_s=math.nan, eta_s=math.inf,
        eta_low_s=-math.inf, stale_code=True, last_response_at=1699999997.0,
    )  # fmt: skip
    aged = replace(odd, last_response_at=1699999997.5)
    for snapshot in (
        replace(SNAPSHOT, datasets=(DATASET, odd)),
        replace(SNAPSHOT, taken_at=1700000001.5, datasets=(DATASET, aged)),
        replace(SNAPSHOT, datasets=(aged, DATASET, replace(aged, api_usage=None))),
        replace(SNAPSHOT, datasets=()),
    ):
        assert encode(Event("snapshot", snapshot), memo) == encode(Event("snapshot", snapshot))
        assert encode_result(7, snapshot, memo) == encode(Response(7, to_wire(snapshot)))


def test_a_memo_encodes_only_the_fields_that_changed_since_the_last_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memo = WireMemo()
    settled = replace(DATASET, last_response_at=1699999940.0)
    encode(Event("snapshot", SNAPSHOT), memo)
    encode(Event("snapshot", replace(SNAPSHOT, datasets=(settled,))), memo)
    encoded: list[Any] = []
    text = encoding._text

    def recording(value: Any, *args: Any) -> str:
        encoded.append(value)
        return text(value, *args)

    monkeypatch.setattr(encoding, "_text", recording)
    moved = replace(settled, last_response_at=1699999941.25)
    line = encode(Event("snapshot", replace(SNAPSHOT, datasets=(moved,))), memo)
    assert 1699999941.25 in encoded
    assert b'"last_response_at":1699999941.25' in line
    assert not {"B1_sharegpt", 4000, 12.5} & {
        v for v in encoded if isinstance(v, (str, int, float))
    }
    assert DATASET.api_usage not in encoded
    assert DATASET.tokens_per_s_by_window not in encoded


@dataclass(frozen=True)
class WithList:
    items: list[int]
    count: int


def test_a_memo_encodes_again_a_list_that_changed_in_place() -> None:
    memo = WireMemo()
    items = [1]
    encode_result(1, WithList(items, 1), memo)
    items.append(2)
    assert (
        encode_result(2, WithList(items, 2), memo)
        == b'{"id":2,"result":{"items":[1,2],"count":2}}\n'
    )
