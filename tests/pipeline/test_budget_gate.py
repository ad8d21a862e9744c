"""The budget gate's arithmetic, with the clock passed in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.pipeline.inference.budget import BudgetGate, LengthIndex


def test_no_budget_always_dispatches() -> None:
    gate = BudgetGate(None, 100.0)
    gate.resume([10**6] * 100)
    assert gate.may_dispatch(0.0)


def test_a_budget_smaller_than_the_prior_still_sends_one_request_at_a_time() -> None:
    gate = BudgetGate(50, 2048.0)  # --token-budget 50 with max_new_tokens 4096
    assert gate.may_dispatch(0.0)
    gate.sent("a", 0.0)
    assert not gate.may_dispatch(0.0)
    gate.answered("a", 30, 1.0)
    assert gate.may_dispatch(1.0)  # 30 of 50: nothing in flight, so one more


def test_the_prior_is_used_until_a_response_is_seen() -> None:
    gate = BudgetGate(1000, 400.0)
    assert gate.expected_tokens == 400.0
    gate.sent("a", 0.0)
    gate.sent("b", 0.0)
    assert not gate.may_dispatch(0.0)  # 2 in flight x 400 + a new 400 > 1000 + 200
    gate.answered("b", None, 1.0)
    assert gate.may_dispatch(1.0)


def test_short_completions_make_room_again() -> None:
    gate = BudgetGate(1000, 400.0)
    gate.sent("a", 0.0)
    gate.sent("b", 0.0)
    assert not gate.may_dispatch(0.0)
    gate.answered("b", 100, 10.0)  # short: 10 tokens/s, mean now 100
    assert gate.may_dispatch(10.0)


def test_old_requests_are_expected_to_be_the_long_ones() -> None:
    gate = BudgetGate(100_000, 4000.0)
    gate.resume([100] * 90 + [3000] * 10)  # mean 390
    for n in range(20):
        gate.sent(("short", n), 0.0)
        gate.answered(("short", n), 100, 1.0)  # 100 tokens/s per request
    gate.sent("young", 100.0)
    gate.sent("old", 80.0)
    projected = gate.projected_tokens(100.5)
    # young has made ~50 tokens: expected the mean of all lengths over 50 (~371);
    # old has made ~2050: only the 3000-token answers are longer, so expect 3000.
    young = (110 * 100 + 10 * 3000) / 120
    assert abs(projected - (gate.tokens_done + young + 3000)) < 1e-6


def test_a_request_longer_than_anything_seen_is_expected_to_run_on() -> None:
    gate = BudgetGate(10**6, 4000.0)
    gate.sent("x", 0.0)
    gate.answered("x", 100, 1.0)
    gate.sent("y", 0.0)
    assert gate.projected_tokens(10.0) == 100 + 1000 * 1.25


def test_reached_stops_everything() -> None:
    gate = BudgetGate(1000, 10.0)
    gate.resume([10] * 100)
    assert gate.reached
    assert not gate.may_dispatch(0.0)


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=200), st.integers(-1, 6000))
def test_length_index_matches_a_plain_count(lengths: list[int], threshold: int) -> None:
    index = LengthIndex(size=8)
    for length in lengths:
        index.add(length)
    longer = [n for n in lengths if n > threshold]
    assert index.longer_than(threshold) == (len(longer), sum(longer))


def test_cancel_mode_keeps_every_slot_busy_until_the_budget_is_met() -> None:
    gate = BudgetGate(1000, 400.0, keep_full=True)
    for n in range(50):
        gate.sent(n, 0.0)
    assert gate.may_dispatch(0.0)
    gate.answered(0, 1000, 1.0)
    assert not gate.may_dispatch(1.0)
