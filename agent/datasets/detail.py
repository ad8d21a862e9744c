"""A closer look at one dataset: its latest responses, finish reasons, errors, length histogram.

Read from the end of the files only (the last few MB), so it costs the same on a 10 GB dataset
as on a small one; the figures describe the recent responses and say how many they cover.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from agent.datasets.finish_reasons import finish_reason
from agent.datasets.glued_lines import read_line
from agent.datasets.response_lines import response_tokens
from agent.datasets.runner_status import read_runner_status
from agent.host.regular_files import open_regular
from agent.protocol import DatasetDetail, ErrorSummary, ResponseSummary

TAIL_BYTES = 8 * 1024 * 1024
HISTOGRAM_BINS = 12
MAX_TEXT_CHARS = 500


def dataset_detail(name: str, folder: Path, responses_file: str, recent: int) -> DatasetDetail:
    """The detail of the dataset in `folder`."""
    records = [
        r
        for r in map(_json, _tail_lines(folder / responses_file))
        if response_tokens(r) is not None
    ]
    lengths = [int(response_tokens(r) or 0) for r in records]
    reasons: dict[str, int] = {}
    for record in records:
        reason = _finish(record)
        reasons[reason] = reasons.get(reason, 0) + 1
    edges, counts = _histogram(lengths)
    errors = [e for e in map(_json, _tail_lines(folder / "errors.jsonl")) if isinstance(e, dict)]
    return DatasetDetail(
        name=name,
        window_responses=len(records),
        recent=tuple(
            ResponseSummary(
                str(r["id"]), int(response_tokens(r) or 0), _finish(r), _float(r.get("latency_s"))
            )
            for r in records[-recent:]
        ),
        finish_reasons=reasons,
        length_edges=tuple(edges),
        length_counts=tuple(counts),
        errors=tuple(
            ErrorSummary(_text(e.get("id")), _text(e.get("reason", "")), e.get("permanent") is True)
            for e in errors[-recent:]
        ),
        api_usage=run.api_usage if (run := read_runner_status(folder)) else None,
        generation=run.generation if run else {},
    )


def _tail_lines(path: Path) -> list[bytes]:
    """The complete lines of the last TAIL_BYTES; raises NotRegularFileError for a FIFO or device."""
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read(TAIL_BYTES)
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    first_complete = 1 if size > TAIL_BYTES else 0
    return [line for line in lines[first_complete:-1] if line.strip()]


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        pass
    found = read_line(line)  # a torn record glued to a complete one: the complete one shows
    return _json(found.responses[-1].record) if found.responses else None


def _finish(record: dict[str, Any]) -> str:
    reason = finish_reason(record)
    return _text(reason) if reason else "unknown"


def _text(value: object) -> str:
    """A field from someone else's file as a short string (its size is theirs to choose)."""
    text = value if isinstance(value, str) else repr(value)[:MAX_TEXT_CHARS]
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def _float(value: object) -> float | None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if number and math.isfinite(value) else None  # type: ignore[arg-type]


def _histogram(lengths: list[int]) -> tuple[list[int], list[int]]:
    if not lengths:
        return [], []
    top = max(lengths) + 1
    width = max(1, -(-top // HISTOGRAM_BINS))
    counts = [0] * HISTOGRAM_BINS
    for length in lengths:
        counts[min(length // width, HISTOGRAM_BINS - 1)] += 1
    return [i * width for i in range(HISTOGRAM_BINS + 1)], counts
