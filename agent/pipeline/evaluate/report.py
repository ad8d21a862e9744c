"""eval.json: the levels in the fixed shape the agent reads, the verdict, and the rest beside them.

The keys of a level that the agent reads (agent/probes/pipeline_reports.py) keep their names and
types; new figures are added beside them, each named in `definitions`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from agent.pipeline.evaluate.definitions import DEFINITIONS
from agent.pipeline.evaluate.figures import SLOWER, ServerFigures, is_slower, speedup, verdict
from agent.pipeline.evaluate.options import EvaluateOptions, PromptSets
from agent.pipeline.evaluate.slices import SliceResult, losing_words, slice_row

EVAL_FILE = "eval.json"
Level = tuple[int, ServerFigures, ServerFigures | None]
"""Concurrency, the drafter's figures, the baseline's."""


def report(
    options: EvaluateOptions, prompts: PromptSets, levels: list[Level],
    slices: list[SliceResult] | None = None, left_out: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What eval.json holds."""
    rows = [level_row(*level) for level in levels]
    summary = [(row["concurrency"], row["speedup"], d.accept_length) for row, (_, d, _) in
               zip(rows, levels, strict=True)]  # fmt: skip
    sliced = [slice_row(result) for result in slices or []]
    return {
        "levels": rows,
        "domains": [row for row in sliced if row["kind"] == "domain"],
        "lengths": [row for row in sliced if row["kind"] == "length"],
        "slices_left_out": left_out or [],
        "verdict": verdict(summary) + _warm_cache_words(rows) + losing_words(sliced, SLOWER),
        "slower": is_slower(summary),
        "finished_at": time.time(),
        "definitions": DEFINITIONS,
        "settings": _settings(options, prompts),
        "details": [
            {"concurrency": c, "server": dataclasses.asdict(drafter),
             "baseline": dataclasses.asdict(baseline) if baseline else None}
            for c, drafter, baseline in levels
        ],
    }  # fmt: skip


def level_row(
    concurrency: int, drafter: ServerFigures, baseline: ServerFigures | None
) -> dict[str, Any]:
    """One level as the agent reads it, with the new figures after the old ones."""
    histogram, positions = drafter.spec_correct_drafts_histogram, drafter.spec_position_acceptance
    return {
        "concurrency": concurrency,
        "tokens_per_s": round(drafter.tokens_per_s, 2),
        "baseline_tokens_per_s": round(baseline.tokens_per_s, 2) if baseline else None,
        "speedup": speedup(drafter, baseline),
        "accept_length": _rounded(drafter.accept_length, 3),
        "latency_p50_s": round(drafter.latency_p50_s, 4),
        "latency_p95_s": round(drafter.latency_p95_s, 4),
        "accept_length_decode_steps": _rounded(drafter.accept_length_decode_steps, 3),
        "spec_accept_rate": _rounded(drafter.spec_accept_rate, 4),
        "spec_correct_drafts_histogram": list(histogram) if histogram else None,
        "spec_position_acceptance": list(positions) if positions else None,
        "warm_cache": not drafter.cache_flushed or bool(baseline and not baseline.cache_flushed),
    }  # fmt: skip


def _rounded(value: float | None, digits: int) -> float | None:
    return round(value, digits) if value is not None else None


def _warm_cache_words(rows: list[dict[str, Any]]) -> str:
    warm = [str(row["concurrency"]) for row in rows if row["warm_cache"]]
    if not warm:
        return ""
    return f"; concurrency {', '.join(warm)} ran on a warm cache (the cache was not flushed)"


def _settings(options: EvaluateOptions, prompts: PromptSets) -> dict[str, Any]:
    assert options.request is not None
    return {
        "server": options.server, "baseline": options.baseline, "prompts": str(options.prompts),
        "num_prompts": options.num_prompts, "max_new_tokens": options.max_new_tokens,
        "temperature": options.temperature, "stream": options.stream,
        "ignore_eos": options.request.ignore_eos, "prompts_measured": len(prompts.measured),
        "warmup": options.warmup, "warmup_prompts": len(prompts.warmup),
        "flush_timeout_s": options.flush_timeout_s,
        "domains": {name: str(path) for name, path in options.domains},
        "length_buckets": list(options.length_edges), "slice_prompts": options.slice_prompts,
    }  # fmt: skip


def write_report(out: Path, record: dict[str, Any]) -> Path:
    """OUT/eval.json, replaced whole."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / EVAL_FILE
    partial = path.with_name(EVAL_FILE + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(path)
    return path


def level_line(concurrency: int, drafter: ServerFigures, baseline: ServerFigures | None) -> str:
    """The progress line of a measured level."""
    accept = f", accept length {drafter.accept_length:.2f}" if drafter.accept_length else ""
    if drafter.accept_length_decode_steps:
        accept += f" ({drafter.accept_length_decode_steps:.2f} per decode pass)"
    line = f"evaluate: concurrency {concurrency}: {drafter.tokens_per_s:,.1f} tokens/s{accept}"
    if baseline is not None and baseline.tokens_per_s:
        line += (f"; baseline {baseline.tokens_per_s:,.1f} tokens/s: "
                 f"{drafter.tokens_per_s / baseline.tokens_per_s:.2f}×")  # fmt: skip
    failed = drafter.failed + (baseline.failed if baseline else 0)
    return line + (f"; {failed} request(s) failed" if failed else "")
