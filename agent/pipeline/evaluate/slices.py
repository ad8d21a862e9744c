"""The drafter per domain and per prompt length: the same measure, on one slice of prompts at a time.

Acceptance varies by domain (speculators PR #610: HumanEval 3.48 … summarisation 2.48) and falls
with the prompt's length (2.30 at 2k tokens, 1.09 at 16k, speculators PR #684). A mixed level
hides both, and on vLLM no per-request figure can be split afterwards, so each slice is measured
on its own: a domain is a prompt file (`--domain NAME=FILE`), a length bucket the prompts of all
files whose token count falls between two of `--length-buckets`; each at one concurrency, on the
server and the baseline, through the level procedure (warm-up, flush, prompts, the server's count).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.pipeline.evaluate.figures import ServerFigures, speedup

MAX_SLICES = 64


@dataclass(frozen=True, slots=True)
class Slice:
    """One slice's prompts (ids), named."""

    kind: str
    """"domain" or "length"."""
    name: str
    prompts: list[list[int]]


@dataclass(frozen=True, slots=True)
class SliceResult:
    """One slice measured."""

    slice: Slice
    concurrency: int
    drafter: ServerFigures
    baseline: ServerFigures | None


def length_slices(
    pool: list[list[int]], edges: tuple[int, ...], per_slice: int, least: int
) -> tuple[list[Slice], list[str]]:
    """The prompts of `pool` by token count between `edges`; and why a bucket was left out.

    Only when the prompts span two buckets or more (one bucket is the whole level again); a
    bucket with fewer than `least` prompts (the slice's concurrency) is named and left out.
    """
    lows = (0, *edges)
    buckets: list[tuple[str, list[list[int]]]] = []
    for index, low in enumerate(lows):
        high = lows[index + 1] if index + 1 < len(lows) else None
        name = f"{low:,}+ tokens" if high is None else f"{low:,}-{high - 1:,} tokens"
        inside = [ids for ids in pool if len(ids) >= low and (high is None or len(ids) < high)]
        buckets.append((name, inside))
    filled = [(name, ids) for name, ids in buckets if ids]
    if len(filled) < 2:
        return [], []
    kept = [Slice("length", name, ids[:per_slice]) for name, ids in filled if len(ids) >= least]
    left = [f"{name}: {len(ids)} prompt(s), fewer than concurrency {least}"
            for name, ids in filled if len(ids) < least]  # fmt: skip
    return kept, left


def slice_row(result: SliceResult) -> dict[str, object]:
    """A slice as eval.json holds it."""
    drafter, baseline = result.drafter, result.baseline
    failed = drafter.failed + (baseline.failed if baseline else 0)
    # a slice with failed requests compares no speed (a prompt past the context...)
    compared = None if failed else speedup(drafter, baseline)
    first_error = drafter.first_error or (baseline.first_error if baseline else None)
    prompts = result.slice.prompts
    return {
        "kind": result.slice.kind, "name": result.slice.name, "prompts": len(prompts),
        "mean_prompt_tokens": round(sum(map(len, prompts)) / len(prompts), 1) if prompts else 0,
        "concurrency": result.concurrency, "tokens_per_s": round(drafter.tokens_per_s, 2),
        "baseline_tokens_per_s": round(baseline.tokens_per_s, 2) if baseline else None,
        "speedup": compared,
        "accept_length": round(drafter.accept_length, 3) if drafter.accept_length else None,
        "spec_accept_rate": (
            round(drafter.spec_accept_rate, 4) if drafter.spec_accept_rate is not None else None
        ),
        "failed": failed, "first_error": first_error,
    }  # fmt: skip


def losing_words(rows: list[dict[str, object]], slower: float) -> str:
    """`; loses on domain math (0.91×), 2,048+ tokens (0.88×)`, or nothing.

    Then the slices whose requests failed, which compare no speed.
    """
    losing = [
        f"{'domain ' if row['kind'] == 'domain' else ''}{row['name']} ({row['speedup']:.2f}×)"
        for row in rows
        if isinstance(row["speedup"], float) and row["speedup"] < slower
    ]
    failing = [f"{'domain ' if row['kind'] == 'domain' else ''}{row['name']}" for row in rows
               if row["failed"]]  # fmt: skip
    words = f"; loses on {', '.join(losing)}" if losing else ""
    return words + (
        f"; requests failed on {', '.join(failing)} (details say why)" if failing else ""
    )
