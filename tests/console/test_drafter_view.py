"""The drafter panel's text, the export screen's rows, and the measured accept length beside the
trainer's best eval acceptance: pure functions of the snapshot."""

from __future__ import annotations

import dataclasses

from agent.protocol import (
    DrafterEvaluation,
    EvalLevel,
    ExportDatasetQuality,
    ExportSummary,
    JobInfo,
    TrainingProgress,
)
from agent.protocol.snapshot import TrainingEval
from console.model.drafter_view import (
    drafter_text,
    export_row,
    level_lines,
    measured_accept_length,
)
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


def test_a_run_without_evaluation_or_total_note_reads_as_before() -> None:
    progress = TrainingProgress(
        "t-1", 600, 900, 1, 1.234, None, None, 2.8, 3.0, 500, 1_800.0, (3.0, 2.0), (1.5, 2.8)
    )
    assert training_text((progress,), ()) == (
        "t-1: step 600/900 · epoch 1 · ETA 30m 00s\n  loss 1.234 █▁\n"
        "  accept len 2.80 (best 3.00 @ 500) ▁█"
    )


EVALUATED = TrainingProgress(
    "t-1", 1_200, 6_000, 1, 2.301, 1e-4, 0.7, 2.72, 2.85, 800, 2_400.0, (2.4, 2.301), (2.6, 2.72),
    3, accuracy=0.61, eval=TrainingEval(1_000, 2.1, 0.74, 2.81, 0.7, (2.2, 2.1), (2.85, 2.81)),
    total_note="training.max_steps in run.yaml", seconds_per_step=0.5,
)  # fmt: skip


def test_the_evaluation_has_a_line_of_its_own_apart_from_training() -> None:
    jobs = (JobInfo("t-1", "train", "train", "running", ()),)
    lines = training_text((EVALUATED,), jobs, 2.66).splitlines()
    assert lines == [
        "train: step 1,200/6,000 · epoch 1/3 · ETA 40m 00s",
        "  loss 2.301 █▁ · acc 0.61",
        "  accept len 2.72 ▁█",
        "  eval @ 1,000: loss 2.100 · acc 0.74 · accept len 2.81 (best 2.85 @ 800) · measured 2.66 █▁",
        "  total from training.max_steps in run.yaml",
    ]


def test_an_unknown_total_says_why_and_host_text_is_shown_literally() -> None:
    lying = dataclasses.replace(
        EVALUATED, total_steps=None, eta_s=None, epochs=None,
        total_note="training.max_steps = -5 in \x1b[2Jrun.yaml is not a positive whole number",
    )  # fmt: skip
    lines = training_text((lying,), ()).splitlines()
    assert lines[0] == "t-1: step 1,200 · epoch 1 · ETA —"
    assert lines[-1] == (
        "  total unknown: training.max_steps = -5 in ␛[2Jrun.yaml is not a positive whole number"
    )


def test_an_evaluation_with_only_per_position_accuracy_shows_what_there_is() -> None:
    only_eval = dataclasses.replace(
        EVALUATED, acceptance_length=None, accuracy=None,
        eval=TrainingEval(1_000, acceptance_length=2.5), total_note="",
    )  # fmt: skip
    lines = training_text((only_eval,), ()).splitlines()
    assert lines[1:] == ["  loss 2.301 █▁", "  eval @ 1,000: accept len 2.50 (best 2.85 @ 800) "]


def test_a_level_shows_both_accept_lengths_the_accept_rate_and_a_warm_cache() -> None:
    measured = EvalLevel(1, 330.7, 155.7, 2.124, 3.05, 0.29, 0.31, 3.0, 0.52, warm_cache=True)
    evaluation = dataclasses.replace(EVALUATION, levels=(measured,))
    [_, line] = drafter_text(evaluation, None).splitlines()
    assert line == (
        "  c=1: 331 tok/s vs 156 2.12× · accept 3.05 (3.00 per decode pass) · drafts 52% "
        "accepted · p50 0.29 s · warm cache"
    )


def test_a_level_too_wide_for_the_panel_takes_two_lines_that_fit_it() -> None:
    measured = EvalLevel(1, 330.7, 155.7, 2.124, 3.05, 0.29, 0.31, 3.0, 0.52, warm_cache=True)
    assert level_lines(measured, 60) == [
        "  c=1: 331 tok/s vs 156 2.12× · p50 0.29 s · warm cache",
        "    accept 3.05 (3.00 per decode pass) · drafts 52% accepted",
    ]
    assert level_lines(measured, 120) == level_lines(measured)
    assert len(level_lines(measured)) == 1
    evaluation = dataclasses.replace(EVALUATION, levels=(measured,))
    assert drafter_text(evaluation, None, width=60).splitlines()[1:] == level_lines(measured, 60)


def test_a_diverged_stuck_or_past_its_peak_run_says_so_in_its_block() -> None:
    """The agent's alerts say it too; the block must not show a finite loss or a calm best."""
    lying = dataclasses.replace(
        EVALUATED, loss_not_finite=True, zero_records=12, evals_since_best=3
    )
    lines = training_text((lying,), ()).splitlines()
    assert lines[1] == "  loss NaN or inf (DIVERGED) █▁ · acc 0.61"
    assert lines[2] == "  loss or acc exactly 0 for 12 logged steps: nothing learnt?"
    assert "(best 2.85 @ 800, 3 eval(s) below it since)" in lines[4]


def test_the_best_checkpoint_or_why_it_is_unknown_has_a_line() -> None:
    kept = dataclasses.replace(EVALUATED, best_checkpoint="/ckpt/r-step800")
    assert "  best checkpoint /ckpt/r-step800" in training_text((kept,), ()).splitlines()
    lost = dataclasses.replace(
        EVALUATED, best_checkpoint_note="no checkpoint for step 800 under /ckpt (saved: 500, 1,000)"
    )
    assert (
        "  best checkpoint unknown: no checkpoint for step 800 under /ckpt (saved: 500, 1,000)"
        in training_text((lost,), ()).splitlines()
    )
    assert "best checkpoint" not in training_text((EVALUATED,), ())
