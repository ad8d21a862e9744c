"""The dataset detail's tokens-over-time chart: how the count grew against the budget line.

Renders what the agent's history sent with the detail (`DatasetDetail.tokens_over_time`); the
chart itself is `console/model/token_chart.py`, 60 columns wide so it reads at 80.
"""

from __future__ import annotations

from textual.widgets import Static

from agent.protocol import DatasetDetail
from console.model.safe_text import literal_lines
from console.model.token_chart import token_chart

CHART_COLUMNS = 60
CHART_ROWS = 6


class TokensOverTime(Static):
    """Tokens over time with the budget line, from the detail it is given."""

    def __init__(self, detail: DatasetDetail) -> None:
        lines = token_chart(detail.tokens_over_time, detail.budget, CHART_COLUMNS, CHART_ROWS)
        super().__init__(literal_lines("\n".join(lines)), id="dataset-tokens-over-time")
