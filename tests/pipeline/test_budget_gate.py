"""The budget gate's arithmetic."""

from __future__ import annotations

from agent.pipeline.inference.budget import BudgetGate


def test_no_budget_always_dispatches() -> None:
    gate = BudgetGate(None, 100.0, tokens_done=10**9, in_flight=10**6)
    assert gate.may_dispatch()


def test_the_prior_is_used_until_a_response_is_seen() -> None:
    gate = BudgetGate(1000, 400.0)
    assert gate.expected_tokens == 400.0
    gate.in_flight = 2
    assert not gate.may_dispatch()  # 2 x 400 + 200 >= 1000
    gate.in_flight = 1
    assert gate.may_dispatch()


def test_short_completions_make_room_again() -> None:
    gate = BudgetGate(1000, 400.0, in_flight=2)
    assert not gate.may_dispatch()
    gate.in_flight -= 1
    gate.record(100)  # came in short: mean is now 100
    assert gate.projected_tokens == 200
    assert gate.may_dispatch()


def test_reached_stops_everything() -> None:
    gate = BudgetGate(1000, 10.0, tokens_done=1000, responses_done=100)
    assert gate.reached
    assert not gate.may_dispatch()
