"""A closer look at one dataset: its latest responses, finish reasons, errors, length histogram.

Read from the end of the files only (the last few MB), so it costs the same on a 10 GB dataset
as on a small one; the figures describe the recent responses and say how many they cover.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.datasets.glued_lines import read_line
from agent.datasets.response_lines import response_tokens
from agent.protocol import DatasetDetail, ErrorSummary, ResponseSummary

TAIL_BYTES = 8 * 1024 * 1024
HISTOGRAM_BINS = 12


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
            ErrorSummary(str(e.get("id")), str(e.get("reason", "")), bool(e.get("permanent")))
            for e in errors[-recent:]
        ),
    )


def _tail_lines(path: Path) -> list[bytes]:
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    first_complete = 1 if size > TAIL_BYTES else 0
    return [line for line in lines[first_complete:-1] if line.strip()]


def _json(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        pass
    found = read_line(line)  # a torn record glued to a complete one: the complete one shows
    return _json(found.responses[-1].record) if found.responses else None


def _finish(record: dict[str, Any]) -> str:
    reason = record.get("finish_reason")
    if isinstance(reason, dict):
        reason = reason.get("type")
    return str(reason) if reason else "unknown"


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _histogram(lengths: list[int]) -> tuple[list[int], list[int]]:
    if not lengths:
        return [], []
    top = max(lengths) + 1
    width = max(1, -(-top // HISTOGRAM_BINS))
    counts = [0] * HISTOGRAM_BINS
    for length in lengths:
        counts[min(length // width, HISTOGRAM_BINS - 1)] += 1
    return [i * width for i in range(HISTOGRAM_BINS + 1)], counts
