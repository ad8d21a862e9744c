"""The parts of `runner.json` a run is made of, and the last words of a run a full disk stopped."""

from __future__ import annotations

from typing import Any

from agent.pipeline.inference.budget import BudgetGate
from agent.pipeline.inference.options import RunnerOptions
from agent.pipeline.inference.records import ResumeState
from agent.pipeline.inference.response_line import DatasetTally
from agent.pipeline.inference.status import RunStats


def options_fields(options: RunnerOptions) -> dict[str, Any]:
    """What the run was asked to do, as runner.json says it."""
    return {
        "dataset_dir": str(options.dataset_dir),
        "servers": list(options.servers),
        "api": options.api,
        "model": options.model,
        "budget": options.token_budget,
        "max_samples": options.max_samples,
        "on_budget": options.on_budget,
        "concurrency": options.concurrency,
        "max_new_tokens": options.max_new_tokens,
        "sampling": sampling_fields(options),
    }


def sampling_fields(options: RunnerOptions) -> dict[str, Any]:
    """How the answers were generated: the provenance a dataset's detail shows."""
    return {
        "temperature": options.temperature,
        "top_p": options.top_p,
        "top_k": options.top_k,
        "min_p": options.min_p,
        "seed": options.seed,
        "turns": options.turns,
        "reasoning": options.reasoning,
        "template_kwargs": options.template_kwargs,
    }


def progress_fields(gate: BudgetGate, resume: ResumeState, now: float) -> dict[str, Any]:
    """Where the dataset stands against its budget, and what resuming found."""
    return {
        "responses": gate.responses_done,
        "tokens": gate.tokens_done,
        "expected_tokens_per_response": round(gate.expected_tokens, 1),
        "projected_tokens": round(gate.projected_tokens(now)),
        "resumed_responses": len(resume.done_ids),
        "resumed_tokens": resume.tokens,
        "duplicates_skipped": resume.duplicates,
        "torn_bytes_moved": resume.torn_bytes_moved,
        "corrupt_lines_moved": resume.corrupt_lines_moved,
    }


def dataset_tally(earlier: DatasetTally, stats: RunStats) -> dict[str, Any]:
    """Cost and re-encoding figures of the whole dataset: earlier records and this run's."""
    tally = earlier.plus(stats.cost, stats.reencoded, stats.reencode_mismatches)
    return {
        "dataset_cost": tally.cost,
        "dataset_reencoded": tally.reencoded,
        "dataset_reencode_mismatches": tally.reencode_mismatches,
        "reencode_mismatch_share": tally.mismatch_share,
    }


def write_failed_detail(stats: RunStats, tokens_in_dataset: int) -> list[str]:
    """What a run stopped by a failed write kept and dropped, and what to do."""
    said = [
        f"kept every record written: {stats.completed:,} new this run, "
        f"{tokens_in_dataset:,} tokens in the dataset"
    ]
    if stats.cancelled_requests or stats.discarded_tokens:
        said.append(
            f"dropped {stats.cancelled_requests} request(s) in flight and "
            f"{stats.discarded_tokens:,} tokens of answers there was no room for"
        )
    said.append("free space and rerun: it resumes exactly where it stopped")
    return said
