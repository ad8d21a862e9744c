"""What the dashboard says about the exported training data and the measured drafter. No Textual.

The drafter panel: the evaluation's verdict in words, one line per concurrency level (tokens/s
against the baseline, speedup, accept length, latency), and the export's round trip; the export
screen's rows, one per dataset.
"""

from __future__ import annotations

from agent.protocol import (
    DrafterCheck,
    DrafterEvaluation,
    EvalLevel,
    EvalSlice,
    ExportDatasetQuality,
    ExportSummary,
)
from console.model.drafter_check_view import check_line
from console.model.formatting import tokens
from console.model.safe_text import sanitise


def evaluation_lines(
    evaluation: DrafterEvaluation, width: int | None = None, height: int | None = None
) -> list[str]:
    """The verdict, then each level's lines (see `level_lines`).

    Where two lines a level would not all fit in `height`, each level takes one line, its
    speedup and accept length first (`compact_line`): at 80×24 the panel showed c=1 and c=8
    and not c=32, the slow level that decides the verdict.
    """
    lines = [f"drafter: {sanitise(evaluation.verdict)}"]
    for level in evaluation.levels:
        lines += level_lines(level, width)
    lines += [slice_line(one) for one in evaluation.slices]
    if height is None or len(lines) <= height:
        return lines
    summary = [slices_summary(evaluation.slices)] if evaluation.slices else []
    return [lines[0], *(compact_line(level) for level in evaluation.levels), *summary]


def slice_line(one: EvalSlice) -> str:
    """`  domain math (16 prompts, c=1): 0.91× · accept 2.10 · drafts 37% accepted`."""
    what = f"domain {one.name}" if one.kind == "domain" else one.name
    speedup = f" {one.speedup:.2f}×" if one.speedup is not None else ""
    accept = f" · accept {one.accept_length:.2f}" if one.accept_length else ""
    rate = (f" · drafts {one.spec_accept_rate:.0%} accepted"
            if one.spec_accept_rate is not None else "")  # fmt: skip
    return sanitise(
        f"  {what} ({one.prompts} prompts, c={one.concurrency}):{speedup}{accept}{rate}"
    )


def slices_summary(slices: tuple[EvalSlice, ...]) -> str:
    """Every slice on one line, its speedup (else its accept length): `  math 0.91× · code 1.4×`."""
    parts = [
        f"{one.name} {one.speedup:.2f}×" if one.speedup is not None
        else f"{one.name} accept {one.accept_length:.2f}" if one.accept_length else one.name
        for one in slices
    ]  # fmt: skip
    return sanitise("  " + " · ".join(parts))


def compact_line(level: EvalLevel) -> str:
    """`  c=32: 0.70× · accept 2.66 · 3,051 tok/s vs 4,355 · p50 0.50 s`: what decides first."""
    speedup = f" {level.speedup:.2f}×" if level.speedup is not None else ""
    accept = f" · accept {level.accept_length:.2f}" if level.accept_length else ""
    speed = f"{level.tokens_per_s:,.0f} tok/s"
    if level.baseline_tokens_per_s is not None:
        speed += f" vs {level.baseline_tokens_per_s:,.0f}"
    return f"  c={level.concurrency}:{speedup}{accept} · {speed} · p50 {level.latency_p50_s:.2f} s"


def level_lines(level: EvalLevel, width: int | None = None) -> list[str]:
    """The level on one line, or on two where one is wider than `width`.

    Two: the speed, latency and a warm cache first, the accept lengths and the drafts accepted
    below (the panel cuts a line still too wide with an ellipsis).
    """
    speed = f"{level.tokens_per_s:,.0f} tok/s"
    if level.baseline_tokens_per_s is not None:
        speed += f" vs {level.baseline_tokens_per_s:,.0f}"
    speedup = f" {level.speedup:.2f}×" if level.speedup is not None else ""
    head = f"  c={level.concurrency}: {speed}{speedup}"
    latency = f" · p50 {level.latency_p50_s:.2f} s{' · warm cache' if level.warm_cache else ''}"
    accept = _accept(level)
    whole = f"{head}{accept}{latency}"
    if width is None or len(whole) <= width or not accept:
        return [whole]
    return [f"{head}{latency}", f"    {accept.removeprefix(' · ')}"]


def _accept(level: EvalLevel) -> str:
    """Accept length per request, and per decode pass (SGLang's server figure) where measured."""
    if not level.accept_length:
        return ""
    text = f" · accept {level.accept_length:.2f}"
    if level.accept_length_decode_steps:
        text += f" ({level.accept_length_decode_steps:.2f} per decode pass)"
    if level.spec_accept_rate is not None:
        text += f" · drafts {level.spec_accept_rate:.0%} accepted"
    return text


def export_line(export: ExportSummary) -> str:
    """One line: what was exported and whether its conversations reproduce the tokens."""
    share = "—" if export.roundtrip_share is None else f"{export.roundtrip_share:.1%}"
    verdict = "FAILED" if export.roundtrip_flagged else "ok"
    records = sum(d.ids_lines for d in export.datasets)
    return (
        f"export: {records:,} records, {tokens(export.tokens)} tokens · round trip {share} "
        f"({verdict}; X for the report)"
    )


def drafter_text(
    evaluation: DrafterEvaluation | None, export: ExportSummary | None, width: int | None = None,
    height: int | None = None, check: DrafterCheck | None = None,
) -> str:  # fmt: skip
    """The drafter panel's text ("" when there is nothing to show), fitted to `width` × `height`.

    The drafter check's line (which checkpoint is served, and whether it passed) once it ran.
    """
    checked = (
        check if check is not None and (check.ok is not None or check.note == "checking") else None
    )
    room = None if height is None else height - (export is not None) - (checked is not None)
    lines = evaluation_lines(evaluation, width, room) if evaluation is not None else []
    if checked is not None:
        lines.append(check_line(checked))
    if export is not None:
        lines.append(export_line(export))
    return "\n".join(lines)


def measured_accept_length(evaluation: DrafterEvaluation | None) -> float | None:
    """The accept length the evaluation measured at its lowest concurrency."""
    if evaluation is None:
        return None
    return next((level.accept_length for level in evaluation.levels if level.accept_length), None)


EXPORT_COLUMNS = (
    "dataset", "answers", "tokens", "capped", "empty", "looping", "unclosed", "dup",
    "no answer", "dropped", "round trip",
)  # fmt: skip


def export_row(quality: ExportDatasetQuality) -> tuple[str, ...]:
    """One dataset's row on the export screen."""
    trip = (
        f"{quality.roundtrip_matched / quality.roundtrip_checked:.1%}"
        if quality.roundtrip_checked
        else "—"
    )
    if quality.roundtrip_flagged:
        trip += " FAILED"
    return (
        sanitise(quality.name), f"{quality.answers:,}", tokens(quality.tokens),
        _share(quality.truncated, quality.answers), _share(quality.empty, quality.answers),
        _share(quality.looping, quality.answers), _share(quality.reasoning_unclosed, quality.answers),
        f"{quality.duplicates_skipped:,}", f"{quality.unanswered_prompts:,}",
        f"{quality.dropped_answers:,}", trip,
    )  # fmt: skip


def _share(count: int, total: int) -> str:
    return f"{count:,} ({count / total:.0%})" if total else f"{count:,}"


def export_notes(export: ExportSummary) -> str:
    """Below the table: the first round-trip difference of each failing dataset, and the files."""
    lines = [
        sanitise(f"{d.name}: {d.first_mismatch}")
        for d in export.datasets
        if d.roundtrip_flagged and d.first_mismatch
    ]
    threshold = f"threshold {export.roundtrip_threshold:.0%}"
    lines.append(sanitise(f"files in {export.out_dir} ({threshold}; quality.md per dataset)"))
    return "\n".join(lines)
