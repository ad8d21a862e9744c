"""Every request is bounded before a handler sees it: sizes, counts, intervals and keys.

The codec checks types; this checks sizes. A `logs.read` of -1 bytes would read a whole 10 GB log
into memory, a watch interval of 0 would spin, an idempotency key of 8 MB would be kept for
hours. Each bound is named by its dataclass and field, so it holds wherever that type travels
(a JobSpec inside a hello's pipeline config too), and a refusal names the field. Numbers
without a bound of their own must still fit in 64 bits and be finite.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from agent.protocol import (
    AuditParams,
    DatasetsConfig,
    DetailParams,
    EventsParams,
    FilesHashParams,
    GenerateParams,
    InstallParams,
    JobSpec,
    LaunchParams,
    LogReadParams,
    RedeployParams,
    Request,
    SequenceParams,
    StagedFile,
    WatchParams,
)

MAX_IDEMPOTENCY_KEY_CHARS = 128
MAX_LOG_READ_BYTES = 1024 * 1024
MAX_INT = 2**63 - 1
DAY_S = 86400.0

RANGES: dict[tuple[type, str], tuple[float, float]] = {
    (WatchParams, "interval_s"): (0.1, 3600.0),
    (LogReadParams, "max_bytes"): (1, MAX_LOG_READ_BYTES),
    (DetailParams, "recent"): (1, 1000),
    (AuditParams, "limit"): (1, 10_000),
    (EventsParams, "since_s"): (0.0, 366 * DAY_S),
    (EventsParams, "limit"): (1, 10_000),
    (DatasetsConfig, "stall_guard_s"): (1.0, 365 * DAY_S),
    (InstallParams, "mode"): (0, 0o7777),
    (DatasetsConfig, "budget"): (0, 2**62),
    (DatasetsConfig, "budgets"): (0, 2**62),
    (DatasetsConfig, "stall_after_s"): (1.0, 365 * DAY_S),
    (DatasetsConfig, "overrun_alert_share"): (0.0, 100.0),
    (JobSpec, "grace_s"): (0.0, 7 * DAY_S),
    (JobSpec, "term_grace_s"): (0.0, 7 * DAY_S),
    (JobSpec, "max_restarts"): (0, 1000),
    (JobSpec, "restart_window_s"): (1.0, 30 * DAY_S),
    (JobSpec, "restart_delay_s"): (0.0, DAY_S),
    (StagedFile, "mode"): (0, 0o7777),
}
"""Inclusive bounds of numeric fields (of each value, for a dict field)."""
LENGTHS: dict[tuple[type, str], int] = {
    (FilesHashParams, "paths"): 10_000,
    (LaunchParams, "argv"): 10_000,
    (JobSpec, "argv"): 10_000,
    (RedeployParams, "argv"): 10_000,
    (RedeployParams, "files"): 1_000,
    (GenerateParams, "datasets"): 10_000,
    (SequenceParams, "steps"): 100,
}
"""Most items in a sequence field."""


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
        raise LimitError(
            f"{path} must be between {_show(low)} and {_show(high)}, got {_show(number)}"
        )


def _show(number: float) -> str:
    if isinstance(number, int) and abs(number) >= 10**30:
        return f"a number of {len(str(abs(number))):,} digits"
    if isinstance(number, int) or number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:g}"
