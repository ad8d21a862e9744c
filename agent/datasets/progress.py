"""From counts and rates to what a user decides on: ETA, projected end, overrun, status, alerts.

The run writing a dataset has a stop condition: a token budget, a sample cap or all prompts
(from its runner.json, else its job's argv, else the config's budget). The projection is where
the dataset ends under that condition; the overrun is how far past the configured budget that
is, in tokens and in hours of generation. A run capped only by samples and heading past its
budget is the case this whole module exists for.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.datasets.rates import Rate, RateHistory
from agent.datasets.runner_status import RunView
from agent.protocol import (
    Alert,
    DatasetProgress,
    DatasetStatus,
    Severity,
    StopConditionKind,
    generation_done,
)


@dataclass(frozen=True, slots=True)
class Counts:
    """What the files hold now."""

    prompts: int
    responses: int
    tokens: int
    corrupt_lines: int = 0
    torn_tail_bytes: int = 0
    failed_prompts: int = 0
    """Prompts that failed for good and have no response: no run sends them again."""
    truncated_responses: int = 0
    """Answers cut at max_new_tokens."""
    turn_records: int = 0
    """Records of conversation turns."""
    conversations_done: int = 0
    """Conversations whose last turn is in (each one of `responses`)."""


@dataclass(frozen=True, slots=True)
class StopCondition:
    """Where the run writing a dataset will stop."""

    kind: StopConditionKind
    target_responses: int
    target_tokens: int | None


def stop_condition(counts: Counts, budget: int | None, run: RunView | None) -> StopCondition:
    """The stop condition of the active run, or the config's budget when none runs."""
    if run is not None and run.active:
        cap = min(counts.prompts, run.max_samples) if run.max_samples else counts.prompts
        if run.budget is not None:
            return StopCondition("budget", cap, run.budget)
        return StopCondition("max_samples" if run.max_samples else "all_prompts", cap, None)
    if budget is not None:
        return StopCondition("budget", counts.prompts, budget)
    return StopCondition("all_prompts", counts.prompts, None)


MIN_RESPONSES_TO_PROJECT = 10
"""No projection from fewer responses: one long answer among three moved it by hours."""


def projected_tokens(counts: Counts, condition: StopCondition, in_flight: int = 0) -> int | None:
    """Tokens at the end of the run, from the mean response length so far.

    None until the mean means something: at least MIN_RESPONSES_TO_PROJECT responses, and at
    least as many as the run has in flight, since the first to finish of a batch are its
    shortest. A dataset with nothing left to answer is projected exactly, however few it holds.
    """
    remaining = max(0, condition.target_responses - counts.responses)
    if counts.responses == 0 or (
        remaining and counts.responses < max(MIN_RESPONSES_TO_PROJECT, in_flight)
    ):
        return None
    mean = counts.tokens / counts.responses
    by_responses = counts.tokens + remaining * mean
    if condition.target_tokens is not None:
        by_responses = min(by_responses, max(condition.target_tokens, counts.tokens))
    return round(by_responses)


def eta_s(
    counts: Counts, condition: StopCondition, projected: int | None, rate: Rate
) -> float | None:
    """Seconds to the stop condition at `rate`, or None if nothing moves."""
    if condition.target_tokens is not None and projected is not None:
        remaining = max(0, projected - counts.tokens)
        return remaining / rate.tokens_per_s if rate.tokens_per_s > 0 else None
    remaining_responses = max(0, condition.target_responses - counts.responses)
    if remaining_responses == 0:
        return 0.0
    return remaining_responses / rate.responses_per_s if rate.responses_per_s > 0 else None


@dataclass(frozen=True, slots=True)
class Liveness:
    """Whether something is writing the dataset, and since when nothing came."""

    active: bool
    idle_for_s: float | None
    stall_after_s: float
    frozen: bool = False
    """The writer is stopped (SIGSTOP): stalled at once, however recent its last response."""
    last_response_at: float | None = None
    """When the last response came, on the wall clock (`now - idle_for_s`)."""


def status(
    counts: Counts, budget: int | None, condition: StopCondition, live: Liveness,
    tolerance_share: float = 0.0,
) -> DatasetStatus:  # fmt: skip
    """pending, running, stalled, complete, over_budget or idle (waiting_for_server: _waiting_or).

    `error` is failed_progress's.

    A run that stops at its budget lets the requests in flight finish, so it ends a little past
    it; up to `tolerance_share` of the budget past it is not over budget.
    """
    if budget is not None and counts.tokens > budget * (1 + tolerance_share):
        return "over_budget"
    if live.active:
        stalled = live.frozen or (live.idle_for_s or 0.0) > live.stall_after_s
        return "stalled" if stalled else "running"
    left = condition.target_responses - counts.responses - counts.failed_prompts
    if generation_done(counts.tokens, condition.target_tokens, left if counts.prompts else 1):
        return "complete"
    return "pending" if counts.responses == 0 else "idle"


def dataset_progress(
    name: str, counts: Counts, budget: int | None, run: RunView | None, history: RateHistory,
    live: Liveness, tolerance_share: float = 0.0,
) -> DatasetProgress:  # fmt: skip
    """Everything the dashboard shows for one dataset."""
    condition = stop_condition(counts, budget, run)
    projected = projected_tokens(counts, condition, run.in_flight if run and run.active else 0)
    main, etas = history.rate(), _etas(counts, condition, projected, history.rates())
    overrun = max(0, projected - budget) if projected is not None and budget is not None else None
    eta = eta_s(counts, condition, projected, main) if main else None
    return DatasetProgress(
        name=name, prompts=counts.prompts, responses=counts.responses, tokens=counts.tokens,
        budget=budget, corrupt_lines=counts.corrupt_lines, torn_tail_bytes=counts.torn_tail_bytes,
        tokens_per_s=main.tokens_per_s if main else None,
        responses_per_s=main.responses_per_s if main else None,
        mean_tokens_per_response=counts.tokens / counts.responses if counts.responses else None,
        eta_s=eta,
        eta_low_s=min(etas) if etas else None, eta_high_s=max(etas) if etas else None,
        projected_tokens=projected, projected_overrun_tokens=overrun,
        projected_overrun_hours=_overrun_hours(counts.tokens, budget, projected, eta, main),
        status=_waiting_or(status(counts, budget, condition, live, tolerance_share), run),
        stop_condition=condition.kind,
        target_responses=condition.target_responses, target_tokens=condition.target_tokens,
        in_flight=run.in_flight if run and run.active else 0,
        runner_state=run.state if run else None, runner_sha256=run.runner_sha256 if run else None,
        last_response_at=live.last_response_at, writer_active=live.active,
        failed_prompts=counts.failed_prompts, api_usage=run.api_usage if run else None,
        tokens_per_s_by_window=history.tokens_per_s_by_window(),
        truncated_responses=counts.truncated_responses,
        max_new_tokens=run.max_new_tokens if run else None,
        turn_records=counts.turn_records, conversations_done=counts.conversations_done,
    )  # fmt: skip


def _waiting_or(status: DatasetStatus, run: RunView | None) -> DatasetStatus:
    """A live run with no server to talk to is waiting for one, not running or stalled."""
    waiting = run is not None and run.active and run.state == "waiting_for_server"
    return "waiting_for_server" if waiting and status in ("running", "stalled") else status


def failed_progress(name: str, counts: Counts, budget: int | None) -> DatasetProgress:
    """A dataset that could not be read this time: its last counts, status `error`, no rates."""
    return DatasetProgress(
        name=name, prompts=counts.prompts, responses=counts.responses, tokens=counts.tokens,
        budget=budget, corrupt_lines=counts.corrupt_lines, torn_tail_bytes=counts.torn_tail_bytes,
        status="error", truncated_responses=counts.truncated_responses,
        turn_records=counts.turn_records, conversations_done=counts.conversations_done,
    )  # fmt: skip


def _etas(
    counts: Counts, condition: StopCondition, projected: int | None, rates: list[Rate]
) -> list[float]:
    return [eta for rate in rates if (eta := eta_s(counts, condition, projected, rate)) is not None]


def _overrun_hours(
    tokens: int, budget: int | None, projected: int | None, eta: float | None, rate: Rate | None
) -> float | None:
    """Hours of generation still to come past the budget: what stopping the run now saves.

    On the ETA's own timeline (a run capped by samples has its ETA from the responses' rate), so
    it is never longer than the ETA; the tokens already past the budget are spent, not to come.
    """
    if budget is None or projected is None:
        return None
    to_come, remaining = max(0, projected - max(tokens, budget)), max(0, projected - tokens)
    if not to_come:
        return None
    if eta is not None and remaining:
        return eta * to_come / remaining / 3600
    if rate is None or rate.tokens_per_s <= 0:
        return None
    return to_come / rate.tokens_per_s / 3600


def dataset_alerts(
    progress: DatasetProgress, overrun_alert_share: float, now: float,
    truncation_alert_share: float = 0.0,
) -> list[Alert]:  # fmt: skip
    """The alerts one dataset raises (`truncation_alert_share` 0: no truncation_high)."""
    checks = (
        _budget_reached(progress),
        _over_budget(progress, overrun_alert_share),
        _projected_overrun(progress, overrun_alert_share),
        _stalled(progress, now),
        _stale_code(progress),
        _truncation_high(progress, truncation_alert_share),
    )
    return [
        Alert(kind, severity, message, progress.name, now)
        for kind, severity, message in filter(None, checks)
    ]


AlertText = tuple[str, Severity, str] | None


def _budget_reached(progress: DatasetProgress) -> AlertText:
    budget = progress.budget
    if budget is None or progress.status != "complete" or progress.tokens < budget:
        return None
    past = progress.tokens - budget
    finish = f" (+{past:,}, {past / budget:.1%}: requests in flight finished)" if past else ""
    return (
        "budget_reached",
        "info",
        f"{progress.name} reached its budget: {progress.tokens:,} of {budget:,} tokens{finish}",
    )


def _over_budget(progress: DatasetProgress, share: float) -> AlertText:
    budget = progress.budget
    if budget is None or progress.tokens <= budget * (1 + share):
        return None
    return (
        "over_budget",
        "error",
        (
            f"{progress.name}: {progress.tokens:,} tokens, {progress.tokens - budget:,} over its "
            f"budget of {budget:,}"
        ),
    )


def _projected_overrun(progress: DatasetProgress, share: float) -> AlertText:
    budget, overrun = progress.budget, progress.projected_overrun_tokens or 0
    if budget is None or not progress.writer_active or overrun <= share * budget:
        return None
    hours = progress.projected_overrun_hours if _rate_settled(progress) else None
    cost = f" (~{_generation_time(hours)} more of generation)" if hours else ""
    return (
        "projected_overrun",
        "warning",
        (
            f"{progress.name} will end near {progress.projected_tokens:,} tokens, {overrun:,}{cost} "
            f"past its budget of {budget:,}: {_stops_at(progress)}; "
            f"restart it with --token-budget {budget}"
        ),
    )


def _stops_at(progress: DatasetProgress) -> str:
    """Where the run will stop instead of at the config's budget, in the run's own terms."""
    if progress.stop_condition == "budget" and progress.target_tokens is not None:
        return f"its run's own --token-budget is {progress.target_tokens:,}"
    return f"its run stops at {progress.stop_condition.replace('_', ' ')}"


def _stalled(progress: DatasetProgress, now: float) -> AlertText:
    if progress.status != "stalled":
        return None
    if progress.writer_stopped:
        return (
            "stalled",
            "warning",
            f"{progress.name}: its writer is stopped and still holds it: {progress.writer}; "
            "send it SIGCONT to go on, or stop it (k) to free the dataset",
        )
    minutes = (progress.last_response_age_s(now) or 0) / 60
    return (
        "stalled",
        "warning",
        f"{progress.name}: no new response for {minutes:.0f} min while its run is alive",
    )


def _stale_code(progress: DatasetProgress) -> AlertText:
    if not progress.stale_code:
        return None
    return (
        "stale_code",
        "warning",
        (
            f"{progress.name}: the run writing it runs code that differs from the code on disk; "
            "redeploy to run the new code"
        ),
    )


MIN_RESPONSES_TO_JUDGE_CUTS = 50
"""No truncation_high from fewer responses: 1 cut of 3 says nothing about the run."""


def _truncation_high(progress: DatasetProgress, share: float) -> AlertText:
    cut, responses = progress.truncated_responses, progress.answers
    if not share or responses < MIN_RESPONSES_TO_JUDGE_CUTS or cut / responses <= share:
        return None
    cap = f" {progress.max_new_tokens}" if progress.max_new_tokens is not None else ""
    return (
        "truncation_high",
        "warning",
        (
            f"{progress.name}: {cut / responses:.1%} of its answers were cut at --max-new-tokens"
            f"{cap} ({cut:,} of {responses:,}); raise --max-new-tokens, or drop them in the "
            "export with --drop truncated"
        ),
    )


def _rate_settled(progress: DatasetProgress) -> bool:
    """The history covers a minute of generation: a time said sooner is the first seconds'.

    The alert's first words become a toast that stays: "~26 min more" from a run's first seconds
    sat beside a table that said 7m 40s a few seconds later.
    """
    windows = progress.tokens_per_s_by_window
    return bool(windows) and windows[0] is not None


def _generation_time(hours: float) -> str:
    return f"{hours:.1f} h" if hours >= 1 else f"{max(1, round(hours * 60))} min"
