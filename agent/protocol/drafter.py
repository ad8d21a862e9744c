"""The drafter's data and speed: the latest export's quality report and evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class ExportDatasetQuality:
    """One dataset of the latest training-data export, as its quality report counts it."""

    name: str
    answers: int
    tokens: int
    truncated: int
    empty: int
    looping: int
    reasoning_closed: int
    reasoning_unclosed: int
    duplicates_skipped: int
    unanswered_prompts: int
    no_prompt: int
    prompt_mismatch: int
    corrupt_lines: int
    dropped_answers: int
    ids_lines: int
    conversation_lines: int
    roundtrip_checked: int
    roundtrip_matched: int
    roundtrip_flagged: bool
    first_mismatch: str = ""
    """Where the first conversation that does not reproduce its tokens differs, in words."""
    finish_reasons: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    length_edges: tuple[int, ...] = ()
    length_counts: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """The latest export job's report (its OUT/export_report.json), as the agent read it."""

    job_id: str
    out_dir: str
    finished_at: float
    roundtrip_share: float | None
    roundtrip_threshold: float
    roundtrip_flagged: bool
    tokens: int
    tokens_per_s: float
    datasets: tuple[ExportDatasetQuality, ...] = ()
    sequence_tokens: int | None = None
    """Prompt and answer tokens of every record written, each cut at the trainer's max length
    (None: a report from before the export counted them)."""
    records: int | None = None
    max_length: int | None = None
    """The max length `sequence_tokens` were cut at (the export's --max-length)."""
    longest_record: int | None = None
    """The longest record written (prompt and answer, cut at max_length): a drafter serving this
    data must hold as many positions."""


@dataclass(frozen=True, slots=True)
class EvalLevel:
    """One concurrency level of a drafter evaluation (a row of OUT/eval.json)."""

    concurrency: int
    tokens_per_s: float
    baseline_tokens_per_s: float | None
    speedup: float | None
    accept_length: float | None
    latency_p50_s: float
    latency_p95_s: float
    accept_length_decode_steps: float | None = None
    """SGLang's avg_spec_accept_length over the level's decode passes (accept_length is the mean
    over requests, as SpecForge's benchmark takes it)."""
    spec_accept_rate: float | None = None
    warm_cache: bool = False
    """The /flush_cache before the level failed: its figures include a warm prefix cache."""


@dataclass(frozen=True, slots=True)
class EvalSlice:
    """One domain or prompt-length bucket of a drafter evaluation, measured on its own."""

    kind: Literal["domain", "length"]
    name: str
    prompts: int
    concurrency: int
    tokens_per_s: float
    baseline_tokens_per_s: float | None = None
    speedup: float | None = None
    accept_length: float | None = None
    spec_accept_rate: float | None = None
    mean_prompt_tokens: float = 0.0


@dataclass(frozen=True, slots=True)
class DrafterEvaluation:
    """The latest evaluate job's OUT/eval.json: the levels and the verdict in words."""

    job_id: str
    out_dir: str
    finished_at: float
    verdict: str
    slower: bool
    """Slower than no drafter at some level."""
    levels: tuple[EvalLevel, ...] = ()
    slices: tuple[EvalSlice, ...] = ()
    """Per domain, then per prompt-length bucket (eval.json's domains and lengths)."""
