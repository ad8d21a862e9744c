"""The drafter panel's text, the export screen's rows, and the measured accept length beside the
trainer's best eval acceptance: pure functions of the snapshot."""

from __future__ import annotations

from agent.protocol import (
    DrafterEvaluation,
    EvalLevel,
    ExportDatasetQuality,
    ExportSummary,
    JobInfo,
    TrainingProgress,
)
from console.model.drafter_view import drafter_text, export_row, measured_accept_length
from console.model.formatting import training_text

EVALUATION = DrafterEvaluation(
    "evaluate-1", "/out", 5.0,
    "2.12× at concurrency 1, 0.70× at 32: slower than no drafter at high batch\x1b[31m", True,
    (EvalLevel(1, 330.7, 155.7, 2.124, 2.66, 0.29, 0.31), EvalLevel(32, 3050.6, 4354.7, 0.7, 2.66, 0.5, 0.6)),
)  # fmt: skip
QUALITY = ExportDatasetQuality(
    "B1", answers=200, tokens=50_000, truncated=20, empty=2, looping=4, reasoning_closed=150,
    reasoning_unclosed=30, duplicates_skipped=1, unanswered_prompts=7, no_prompt=0,
    prompt_mismatch=0, corrupt_lines=0, dropped_answers=24, ids_lines=176, conversation_lines=174,
    roundtrip_checked=174, roundtrip_matched=87, roundtrip_flagged=True,
)  # fmt: skip


def test_the_panel_says_the_verdict_each_level_and_the_export() -> None:
    export = ExportSummary("x-1", "/out", 4.0, 0.5, 0.99, True, 50_000, 6e6, (QUALITY,))
    text = drafter_text(EVALUATION, export)
    lines = text.splitlines()
    assert (
        lines[0]
        == "drafter: 2.12× at concurrency 1, 0.70× at 32: slower than no drafter at high batch␛[31m"
    )
    assert lines[1] == "  c=1: 331 tok/s vs 156 2.12× · accept 2.66 · p50 0.29 s"
    assert lines[2].startswith("  c=32: 3,051 tok/s vs 4,355 0.70×")
    assert (
        lines[3] == "export: 176 records, 50K tokens · round trip 50.0% (FAILED; X for the report)"
    )
    assert drafter_text(None, None) == ""


def test_an_export_row_gives_shares_and_a_failed_round_trip() -> None:
    assert export_row(QUALITY) == (
        "B1", "200", "50K", "20 (10%)", "2 (1%)", "4 (2%)", "30 (15%)", "1", "7", "24",
        "50.0% FAILED",
    )  # fmt: skip


def test_training_shows_the_measured_accept_length_beside_the_best_eval() -> None:
    progress = TrainingProgress("t-1", 600, 600, 1, 0.7, None, 0.79, 2.72, 2.75, 540, 0.0)
    jobs = (JobInfo("t-1", "train", "train", "exited", ()),)
    measured = measured_accept_length(EVALUATION)
    text = training_text((progress,), jobs, measured)
    assert "accept len 2.72 (best 2.75 @ 540) · measured 2.66" in text
    assert "measured" not in training_text((progress,), jobs)
