"""The tokens-over-time chart reads at 80 columns and draws the budget line."""

from __future__ import annotations

from agent.protocol import TokensAt
from console.model.token_chart import BUDGET_MARK, token_chart

GROWING = [TokensAt(float(ts), ts * 10) for ts in range(0, 61)]


def test_the_chart_fits_80_columns_and_rises_to_the_budget_it_marks() -> None:
    lines = token_chart(GROWING, budget=1200, width=60, height=6)
    assert all(len(line) <= 80 for line in lines)
    top = lines[0]
    assert top.endswith(" budget 1,200")
    assert BUDGET_MARK in top, "the curve stays under the budget: the line shows"
    bottom = lines[5]
    assert (bottom[0], bottom[59]) == (" ", "█"), "starts at zero, ends high"
    assert lines[-1] == "tokens over the last 1m 00s: 600 of 1,200 (50%)"


def test_a_curve_past_its_budget_fills_the_budget_row_and_no_history_says_so() -> None:
    lines = token_chart(GROWING, budget=300, width=60, height=6)
    budget_row = next(line for line in lines if "budget 300" in line)
    assert budget_row[59] == "█"
    assert lines[-1].endswith("600 of 300 (200%)")
    assert token_chart([], 300)[0].startswith("no history yet")
