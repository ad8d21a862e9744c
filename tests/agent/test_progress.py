"""ETA, projection, overrun and status: the arithmetic a user decides on."""

from __future__ import annotations

import pytest

from agent.datasets.progress import (
    Counts,
    Liveness,
    dataset_alerts,
    dataset_progress,
    status,
    stop_condition,
)
from agent.datasets.rates import RateHistory
from agent.datasets.runner_status import RunView, view_from_argv
from agent.protocol import RATE_WINDOWS_S

LIVE = Liveness(active=True, idle_for_s=5.0, stall_after_s=600.0)


def steady_history(tokens_per_s: float, responses_per_s: float, seconds: int = 600) -> RateHistory:
    history = RateHistory()
    for t in range(0, seconds + 1, 10):
        history.observe(float(t), int(t * tokens_per_s), int(t * responses_per_s))
    return history


def test_a_sample_capped_run_heading_past_its_budget_shows_the_overrun() -> None:
    counts = Counts(prompts=5000, responses=200, tokens=700_000)
    run = view_from_argv(("python", "run_inference.py", "--max-samples", "1000"))
    history = steady_history(1000.0, 1000 / 3500)

    progress = dataset_progress("B3_math", counts, 1_000_000, run, history, LIVE)

    assert progress.stop_condition == "max_samples"
    assert progress.target_responses == 1000
    assert progress.projected_tokens == 3_500_000
    assert progress.projected_overrun_tokens == 2_500_000
    assert progress.eta_s == pytest.approx(800 / (1000 / 3500), rel=0.02)
    # all that is still to come is past the budget here: 2.5M of the 2.8M left, on the ETA's
    # timeline ("ETA 3m 14s, overrun +190.8K (3m 54s)")
    assert progress.projected_overrun_hours == pytest.approx(
        (progress.eta_s or 0) * 2_500_000 / 2_800_000 / 3600
    )
    past = dataset_progress(
        "B3_math", Counts(prompts=5000, responses=400, tokens=1_400_000), 1_000_000, run,
        history, LIVE,
    )  # fmt: skip
    assert past.eta_s is not None
    assert past.projected_overrun_hours == pytest.approx(past.eta_s / 3600), (
        "past its budget, every token to come is overrun: the overrun's time is the ETA"
    )
    [alert] = dataset_alerts(progress, 0.02, now=1.0)
    assert alert.kind == "projected_overrun"
    assert "--token-budget 1000000" in alert.message
    assert "2,500,000" in alert.message


@pytest.mark.parametrize(
    ("responses", "in_flight", "projected"),
    [
        (3, 0, None),  # three answers say little of the next thousand
        (9, 0, None),
        (10, 0, 100_000),
        (40, 64, None),  # the first to finish of 64 in flight are the short ones
        (64, 64, 100_000),
    ],
)
def test_no_projection_until_enough_responses_have_come(
    responses: int, in_flight: int, projected: int | None
) -> None:
    counts = Counts(prompts=5000, responses=responses, tokens=responses * 100)
    run = RunView(active=True, max_samples=1000, in_flight=in_flight)
    progress = dataset_progress("B3", counts, 50_000, run, steady_history(500.0, 5.0), LIVE)
    assert progress.projected_tokens == projected
    assert progress.projected_overrun_tokens == (None if projected is None else 50_000)
    alerts = [a.kind for a in dataset_alerts(progress, 0.02, now=1.0)]
    assert ("projected_overrun" in alerts) == (projected is not None)


def test_a_dataset_with_nothing_left_is_projected_exactly_however_few_it_holds() -> None:
    counts = Counts(prompts=3, responses=3, tokens=420)
    progress = dataset_progress("tiny", counts, 1000, None, RateHistory(), LIVE)
    assert progress.projected_tokens == 420


def test_a_budgeted_run_projects_to_its_budget() -> None:
    counts = Counts(prompts=5000, responses=200, tokens=700_000)
    run = RunView(active=True, budget=1_000_000)

    progress = dataset_progress("B1", counts, 1_000_000, run, steady_history(1000.0, 0.3), LIVE)

    assert (progress.stop_condition, progress.projected_tokens) == ("budget", 1_000_000)
    assert progress.projected_overrun_tokens == 0
    assert progress.eta_s == pytest.approx(300.0, rel=0.02)
    assert dataset_alerts(progress, 0.02, now=1.0) == []


def test_a_run_with_a_larger_budget_of_its_own_is_told_by_its_own_flag() -> None:
    counts = Counts(prompts=5000, responses=200, tokens=700_000)
    run = RunView(active=True, budget=3_000_000)

    progress = dataset_progress("B1", counts, 1_000_000, run, steady_history(1000.0, 0.3), LIVE)

    [alert] = dataset_alerts(progress, 0.02, now=1.0)
    assert alert.kind == "projected_overrun"
    assert "its run's own --token-budget is 3,000,000" in alert.message
    assert "stops at budget" not in alert.message, "a budget it does stop at is not the overrun"


def test_the_eta_range_comes_from_the_rate_windows() -> None:
    history = RateHistory()
    tokens = 0
    for t in range(0, 901, 10):  # slow at first, then three times faster for the last 200 s
        tokens += 10 * (100 if t < 700 else 300)
        history.observe(float(t), tokens, t // 10)
    counts = Counts(prompts=10_000, responses=90, tokens=tokens)

    progress = dataset_progress(
        "B2", counts, 2_000_000, RunView(active=True, budget=2_000_000), history, LIVE
    )

    assert progress.eta_low_s is not None
    assert progress.eta_high_s is not None
    assert progress.eta_s is not None
    assert progress.eta_low_s < progress.eta_s < progress.eta_high_s


@pytest.mark.parametrize(
    ("counts", "budget", "live", "expected"),
    [
        (Counts(10, 0, 0), 100, Liveness(False, None, 600), "pending"),
        (Counts(10, 4, 40), 100, Liveness(False, 3, 600), "idle"),
        (Counts(10, 10, 90), 100, Liveness(False, 3, 600), "complete"),
        (Counts(10, 5, 100), 100, Liveness(False, 3, 600), "complete"),
        (Counts(10, 5, 101), 100, Liveness(True, 3, 600), "over_budget"),
        (Counts(10, 5, 50), 100, Liveness(True, 3, 600), "running"),
        (Counts(10, 5, 50), 100, Liveness(True, 601, 600), "stalled"),
    ],
)
def test_status(counts: Counts, budget: int, live: Liveness, expected: str) -> None:
    run = RunView(active=live.active, budget=budget)
    assert status(counts, budget, stop_condition(counts, budget, run), live) == expected


def test_finishing_the_requests_in_flight_past_the_budget_is_within_tolerance() -> None:
    run = RunView(active=False, budget=1000)
    finished = Counts(10, 10, 1015)
    condition = stop_condition(finished, 1000, run)
    idle = Liveness(False, 3, 600)
    assert status(finished, 1000, condition, idle, tolerance_share=0.02) == "complete"
    assert (
        status(Counts(10, 10, 1021), 1000, condition, idle, tolerance_share=0.02) == "over_budget"
    )
    progress = dataset_progress("B1", finished, 1000, run, RateHistory(), idle, 0.02)
    alerts = {a.kind: a for a in dataset_alerts(progress, 0.02, now=0.0)}
    assert set(alerts) == {"budget_reached"}
    assert "+15, 1.5%: requests in flight finished" in alerts["budget_reached"].message


def test_a_replaced_file_restarts_the_rate_history() -> None:
    history = steady_history(100.0, 1.0, seconds=100)
    history.observe(110.0, 50, 1)
    assert history.rate() is None
    history.observe(120.0, 1050, 11)
    rate = history.rate()
    assert rate is not None
    assert rate.tokens_per_s == pytest.approx(100.0)


def test_a_window_the_history_does_not_cover_has_no_rate_yet() -> None:
    """Five minutes of points gave a "60 min" rate that was the five minutes'."""
    history = steady_history(1000.0, 1.0, seconds=300)
    by_window = dict(zip(RATE_WINDOWS_S, history.tokens_per_s_by_window(), strict=True))
    assert by_window[60.0] == pytest.approx(1000.0)
    assert by_window[300.0] == pytest.approx(1000.0)
    assert by_window[900.0] is None
    assert by_window[3600.0] is None
    hour = steady_history(1000.0, 1.0, seconds=3600)
    assert None not in hour.tokens_per_s_by_window()


def test_the_overrun_alert_quotes_a_time_only_once_a_minute_of_rate_is_in() -> None:
    """Its first words become a toast that stays: "~26 min more" from a run's first seconds sat
    beside a table that said 7m 40s moments later."""
    counts = Counts(prompts=5000, responses=200, tokens=700_000)
    run = view_from_argv(("python", "run_inference.py", "--max-samples", "1000"))
    early = dataset_progress(
        "B3_math", counts, 1_000_000, run, steady_history(1000.0, 1000 / 3500, seconds=30), LIVE
    )
    [alert] = dataset_alerts(early, 0.02, now=1.0)
    assert "more of generation" not in alert.message
    settled = dataset_progress(
        "B3_math", counts, 1_000_000, run, steady_history(1000.0, 1000 / 3500, seconds=120), LIVE
    )
    [alert] = dataset_alerts(settled, 0.02, now=1.0)
    assert "more of generation) past its budget" in alert.message
