"""The latest export's and evaluation's reports, read from their jobs' `--out` folders.

The export writes `OUT/export_report.json` and the evaluation `OUT/eval.json`; the agent finds OUT
in the latest job of each kind's argv and puts what it reads in the snapshot, so a console that
attaches later still sees the verdict. A file is read again only when it changed (size, mtime,
inode); one that is missing, too big or not what the job writes gives nothing, never an error.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal

from agent.host.regular_files import open_regular
from agent.probes.values import count
from agent.protocol import (
    DrafterEvaluation,
    EvalLevel,
    EvalSlice,
    ExportDatasetQuality,
    ExportSummary,
    JobInfo,
)

MAX_REPORT_BYTES = 4 * 1024 * 1024
EXPORT_REPORT = "export_report.json"
EVAL_REPORT = "eval.json"


def out_dir(argv: tuple[str, ...]) -> str | None:
    """The value of `--out` in a command line (`--out DIR` or `--out=DIR`)."""
    for index, arg in enumerate(argv):
        if arg == "--out" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--out="):
            return arg.split("=", 1)[1]
    return None


class PipelineReports:
    """Reads the reports once per change."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple[int, int, int], Any]] = {}

    def export(self, jobs: tuple[JobInfo, ...]) -> ExportSummary | None:
        """The latest export job's summary, if its report is there."""
        found = self._latest(jobs, "export", EXPORT_REPORT)
        return None if found is None else _export_summary(*found)

    def evaluation(self, jobs: tuple[JobInfo, ...]) -> DrafterEvaluation | None:
        """The latest evaluate job's results, if its eval.json is there."""
        found = self._latest(jobs, "evaluate", EVAL_REPORT)
        return None if found is None else _evaluation(*found)

    def _latest(
        self, jobs: tuple[JobInfo, ...], kind: str, name: str
    ) -> tuple[JobInfo, str, dict[str, Any]] | None:
        mine = [job for job in jobs if job.kind == kind and out_dir(job.argv)]
        if not mine:
            return None
        job = max(mine, key=lambda j: j.started_at or 0.0)
        folder = str(out_dir(job.argv))
        if not os.path.isabs(folder) and job.cwd:
            folder = os.path.join(job.cwd, folder)
        record = self._read(Path(folder) / name)
        return (job, folder, record) if isinstance(record, dict) else None

    def _read(self, path: Path) -> Any:
        try:
            with open_regular(path) as handle:
                stat = os.fstat(handle.fileno())
                key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
                cached = self._cache.get(str(path))
                if cached is not None and cached[0] == key:
                    return cached[1]
                if stat.st_size > MAX_REPORT_BYTES:
                    return None
                value = json.loads(handle.read())
        except (OSError, ValueError, RecursionError):
            return None
        self._cache[str(path)] = (key, value)
        return value


def _export_summary(job: JobInfo, folder: str, record: dict[str, Any]) -> ExportSummary | None:
    try:
        trip = record["roundtrip"]
        return ExportSummary(
            job_id=job.id, out_dir=folder, finished_at=_finite(record["finished_at"]),
            roundtrip_share=_float_or_none(trip["share"]),
            roundtrip_threshold=_finite(record["min_roundtrip_share"]),
            roundtrip_flagged=bool(trip["flagged"]), tokens=_whole(record["tokens"]),
            tokens_per_s=_finite(record["tokens_per_s"]),
            datasets=tuple(_dataset(d) for d in record["datasets"]),
            sequence_tokens=_optional_whole(record.get("sequence_tokens")),
            records=_optional_whole(record.get("records")),
            max_length=_optional_whole(record.get("max_length")),
            longest_record=_optional_whole(record.get("longest_record")),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
        return None


def _dataset(record: dict[str, Any]) -> ExportDatasetQuality:
    quality, trip = record["quality"], record["roundtrip"]
    examples = trip.get("examples") or []
    return ExportDatasetQuality(
        name=str(record["name"]), answers=_whole(quality["answers"]), tokens=_whole(quality["tokens"]),
        truncated=_whole(quality["truncated"]), empty=_whole(quality["empty"]),
        looping=_whole(quality["looping"]),
        reasoning_closed=_whole(quality["reasoning"].get("closed", 0)),
        reasoning_unclosed=_whole(quality["reasoning"].get("unclosed", 0)),
        duplicates_skipped=_whole(record["duplicates_skipped"]),
        unanswered_prompts=_whole(record["unanswered_prompts"]),
        no_prompt=_whole(record["no_prompt"]["count"]),
        prompt_mismatch=_whole(record["prompt_mismatch"]["count"]),
        corrupt_lines=_whole(record["corrupt_lines"]), dropped_answers=_whole(quality["dropped_answers"]),
        ids_lines=_whole(record["ids_lines"]), conversation_lines=_whole(record["conversation_lines"]),
        roundtrip_checked=_whole(trip["checked"]), roundtrip_matched=_whole(trip["matched"]),
        roundtrip_flagged=bool(trip["flagged"]),
        first_mismatch=_mismatch_text(examples[0]) if examples else "",
        finish_reasons={str(k): _whole(v) for k, v in quality["finish_reasons"].items()},
        dropped={str(k): _whole(v) for k, v in quality["dropped"].items()},
        length_edges=tuple(_whole(e) for e in quality["length_edges"]),
        length_counts=tuple(_whole(c) for c in quality["length_counts"]),
    )  # fmt: skip


def _mismatch_text(example: Any) -> str:
    """One line of a round-trip example; a shape it does not know gives less, never no report."""
    if not isinstance(example, dict):
        return ""
    record_id = example.get("id", example.get("answer_id", "?"))
    reason = f"{example['reason']}; " if example.get("reason") else ""
    if example.get("detail") and example.get("where") == "render":
        return f"{record_id}: {reason}{example['detail']}"[:500]
    expected, rendered = example.get("expected") or [], example.get("rendered") or []
    return (
        f"{record_id} at token {example.get('position', '?')} ({reason}"
        f"{example.get('where', '?')}): sent {' '.join(map(str, expected))!r}, template "
        f"{' '.join(map(str, rendered))!r}"
    )[:500]


def _evaluation(job: JobInfo, folder: str, record: dict[str, Any]) -> DrafterEvaluation | None:
    try:
        levels = tuple(
            EvalLevel(
                concurrency=_whole(level["concurrency"]),
                tokens_per_s=_finite(level["tokens_per_s"]),
                baseline_tokens_per_s=_float_or_none(level["baseline_tokens_per_s"]),
                speedup=_float_or_none(level["speedup"]),
                accept_length=_float_or_none(level["accept_length"]),
                latency_p50_s=_finite(level["latency_p50_s"]),
                latency_p95_s=_finite(level["latency_p95_s"]),
                accept_length_decode_steps=_finite_or_none(level.get("accept_length_decode_steps")),
                spec_accept_rate=_finite_or_none(level.get("spec_accept_rate")),
                warm_cache=level.get("warm_cache") is True,
            )  # fmt: skip
            for level in record["levels"]
        )
        return DrafterEvaluation(
            job.id, folder, _finite(record.get("finished_at") or 0.0), str(record["verdict"])[:500],
            bool(record.get("slower")), levels, _slices(record),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
        return None


MAX_EVAL_SLICES = 64
MAX_SLICE_NAME = 80


def _slices(record: dict[str, Any]) -> tuple[EvalSlice, ...]:
    """eval.json's domains, then its lengths: each row that is one, the others left out."""
    found: list[EvalSlice] = []
    kinds: tuple[tuple[str, Literal["domain", "length"]], ...] = (
        ("domains", "domain"), ("lengths", "length"),
    )  # fmt: skip
    for key, kind in kinds:
        rows = record.get(key)
        for row in rows if isinstance(rows, list) else []:
            one = _slice(kind, row)
            if one is not None and len(found) < MAX_EVAL_SLICES:
                found.append(one)
    return tuple(found)


def _slice(kind: Literal["domain", "length"], row: Any) -> EvalSlice | None:
    try:
        name = "".join(c for c in str(row["name"]) if c.isprintable())[:MAX_SLICE_NAME]
        return EvalSlice(
            kind, name, _whole(row["prompts"]), _whole(row["concurrency"]),
            _finite(row["tokens_per_s"]), _finite_or_none(row.get("baseline_tokens_per_s")),
            _finite_or_none(row.get("speedup")), _finite_or_none(row.get("accept_length")),
            _finite_or_none(row.get("spec_accept_rate")),
            _finite_or_none(row.get("mean_prompt_tokens")) or 0.0,
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def _finite_or_none(value: Any) -> float | None:
    """An optional figure: a finite number, else missing (never a broken report)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return _finite(value) if math.isfinite(value) else None


def _float_or_none(value: Any) -> float | None:
    return None if value is None else _finite(value)


def _finite(value: Any) -> float:
    """A report's figure: a finite number (1e400 reads as infinity), else the report is not one."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def _whole(value: Any) -> int:
    """A report's count: a whole number from 0 up, else the report is not one."""
    number = count(value)
    if number is None:
        raise ValueError(f"{value!r} is not a count")
    return number


def _optional_whole(value: Any) -> int | None:
    """A count a newer report gives (None when it is missing); a wrong one is no report."""
    return None if value is None else _whole(value)
