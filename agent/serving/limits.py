"""Every request is bounded before a handler sees it: sizes, counts, intervals and keys.

The codec checks types; this checks sizes. A `logs.read` of -1 bytes would read a whole 10 GB log
into memory, a watch interval of 0 would spin, an idempotency key of 8 MB would be kept for
hours. Each bound is named by its dataclass and field, so it holds wherever that type travels
(a JobSpec inside a hello's pipeline config too), and a refusal names the field. Numbers
without a bound of their own must still fit in 64 bits and be finite. The numeric ranges are
the protocol's one table (agent/protocol/ranges.py), which the console checks its config by.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from agent.protocol import (
    MAX_NODES,
    RANGES,
    FilesHashParams,
    GenerateParams,
    JobSpec,
    LaunchParams,
    NodePart,
    RedeployParams,
    Request,
    SequenceParams,
    SweepParams,
    show_number,
)

MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_INT = 2**63 - 1

LENGTHS: dict[tuple[type, str], int] = {
    (FilesHashParams, "paths"): 10_000,
    (LaunchParams, "argv"): 10_000,
    (JobSpec, "argv"): 10_000,
    (RedeployParams, "argv"): 10_000,
    (RedeployParams, "files"): 1_000,
    (GenerateParams, "datasets"): 10_000,
    (SequenceParams, "steps"): 100,
    (SweepParams, "settings"): 64,
    (JobSpec, "nodes"): MAX_NODES,
    (NodePart, "hosts"): MAX_NODES,
}
"""Most items in a sequence field."""
SHORTEST: dict[tuple[type, str], int] = {
    (SweepParams, "settings"): 1,
    (JobSpec, "argv"): 1,
    (LaunchParams, "argv"): 1,
    (RedeployParams, "argv"): 1,
}
"""Fewest items in a sequence field where it is given: a job needs a program to run (an empty
argv was taken through hello and pipeline.apply, and failed only at its launch)."""


class LimitError(ValueError):
    """A request outside its bounds; the message names the field."""


def check_request(request: Request[object]) -> None:
    """Raise LimitError if the key or any field of the params is out of bounds."""
    key = request.idempotency_key
    if key is not None and len(key) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise LimitError(
            f"{request.method}: idempotency_key has {len(key):,} characters; at most "
            f"{MAX_IDEMPOTENCY_KEY_CHARS} are kept"
        )
    _check(request.params, f"{request.method}: params")


def _check(value: Any, where: str) -> None:
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        path = f"{where}.{field.name}"
        bound = RANGES.get((type(value), field.name))
        longest = LENGTHS.get((type(value), field.name))
        if longest is not None and isinstance(item, (tuple, list)) and len(item) > longest:
            raise LimitError(f"{path} has {len(item):,} items; at most {longest:,} are accepted")
        fewest = SHORTEST.get((type(value), field.name))
        if fewest is not None and isinstance(item, (tuple, list)) and len(item) < fewest:
            raise LimitError(f"{path} is empty; it needs at least the program to run")
        for name, number in _numbers(item, path):
            _check_number(number, name, bound)
        for key, inner in _nested(item):
            _check(
                inner, f"{path}{key}" if key.startswith("[") else f"{path}.{key}" if key else path
            )


def _nested(item: Any) -> list[tuple[str, Any]]:
    """The values inside a field that may be dataclasses themselves, named by key or index."""
    if isinstance(item, Mapping):
        return list(item.items())
    if isinstance(item, tuple) and item and dataclasses.is_dataclass(item[0]):
        return [(f"[{index}]", inner) for index, inner in enumerate(item)]
    return [("", item)]


def _numbers(item: Any, path: str) -> list[tuple[str, float]]:
    if isinstance(item, bool):
        return []
    if isinstance(item, (int, float)):
        return [(path, item)]
    if isinstance(item, Mapping):
        return [(f"{path}.{k}", v) for k, v in item.items() if _is_number(v)]
    return []


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_number(number: float, path: str, bound: tuple[float, float] | None) -> None:
    low, high = bound if bound is not None else (-MAX_INT - 1, MAX_INT)
    if isinstance(number, float) and not math.isfinite(number):
        raise LimitError(f"{path} must be a finite number, got {number!r}")
    if not low <= number <= high:
        shown = show_number(number)
        raise LimitError(
            f"{path} must be between {show_number(low)} and {show_number(high)}, got {shown}"
        )
