"""A dataset's tokens over time against its budget, as lines of block characters.

Pure: no I/O and no Textual. The chart is `width` columns of eighth-blocks, `height` rows high,
scaled so the budget (or the highest count, if it passed the budget) is the top; the budget's
row shows a dotted line where the curve does not reach it. Made to read at 80 columns.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from agent.protocol import TokensAt
from console.model.formatting import duration

EIGHTHS = " ▁▂▃▄▅▆▇█"
BUDGET_MARK = "┄"


def token_chart(
    points: Sequence[TokensAt], budget: int | None, width: int = 60, height: int = 6
) -> list[str]:
    """The chart's rows, top first, then a caption; one line saying so when there are no points."""
    if not points:
        return ["no history yet: the agent records tokens as the dataset grows"]
    columns = _columns(points, width)
    top = max(max(columns), budget or 0) or 1
    budget_row = _budget_row(budget, top, height)
    rows = []
    for row in reversed(range(height)):
        cells = "".join(_cell(value / top * height - row, row == budget_row) for value in columns)
        label = f" budget {budget:,}" if row == budget_row and budget is not None else ""
        rows.append(cells + label)
    return [*rows, _caption(points, budget)]


def _columns(points: Sequence[TokensAt], width: int) -> list[int]:
    """The tokens at `width` evenly spaced moments from the first point to the last."""
    times = [p.ts for p in points]
    first, span = times[0], times[-1] - times[0]
    columns = []
    for column in range(width):
        moment = first + span * column / max(1, width - 1)
        columns.append(points[max(0, bisect.bisect_right(times, moment) - 1)].tokens)
    return columns


def _budget_row(budget: int | None, top: int, height: int) -> int | None:
    if budget is None:
        return None
    return min(height - 1, max(0, int(budget / top * height - 1e-9)))


def _cell(filled: float, on_budget_row: bool) -> str:
    """One character: how much of this row's height the value fills, in eighths."""
    if filled <= 0:
        return BUDGET_MARK if on_budget_row else " "
    return EIGHTHS[min(8, max(1, round(filled * 8)))]


def _caption(points: Sequence[TokensAt], budget: int | None) -> str:
    now = points[-1].tokens
    share = f" of {budget:,} ({now / budget:.0%})" if budget else ""
    return f"tokens over the last {duration(points[-1].ts - points[0].ts)}: {now:,}{share}"
