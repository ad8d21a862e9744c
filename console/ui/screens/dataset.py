"""One dataset up close: finish reasons, answers cut, length histogram, latest responses, errors.

On a short terminal the title, the latest responses and the first errors keep their lines; the
histogram and the tokens-over-time chart take at most half the height and scroll (tab to them).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Static

from agent.protocol import DatasetDetail, DatasetProgress
from console.model.api_usage_view import record_shares_line
from console.model.formatting import bar, window_rates_line
from console.model.generation_view import generation_line
from console.model.safe_text import literal, literal_lines, sanitise
from console.model.truncation_view import truncation_line
from console.ui.commands import DATASET_COMMANDS, bindings
from console.ui.widgets.key_footer import KeyFooter
from console.ui.widgets.tokens_over_time import TokensOverTime


def histogram_text(detail: DatasetDetail) -> str:
    """The length histogram as bars, one line per bin."""
    if not detail.length_counts:
        return "no responses yet"
    top = max(detail.length_counts) or 1
    edges = detail.length_edges
    return "\n".join(
        f"{edges[i]:>7,}–{edges[i + 1] - 1:<7,} {bar(count / top, 30)} {count:,}"
        for i, count in enumerate(detail.length_counts)
    )


class DatasetScreen(Screen[None]):
    """The detail the agent sent for one dataset."""

    KEYS = DATASET_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (130, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (40, "-tall")]
    """Wide: the histogram and the chart side by side. Short: the errors take fewer lines."""

    def __init__(
        self, host: str, detail: DatasetDetail, progress: DatasetProgress | None = None
    ) -> None:
        super().__init__()
        self.host = host
        self.detail = detail
        self.progress = progress
        """The dataset as the latest snapshot showed it: its rates over 1/5/15/60 minutes."""

    def compose(self) -> ComposeResult:
        """Summary, histogram, latest responses, errors."""
        detail = self.detail
        reasons = ", ".join(
            f"{reason} {count:,}" for reason, count in sorted(detail.finish_reasons.items())
        )
        title = Text.assemble(
            literal(f"{self.host} · {detail.name}", "bold"),
            literal(
                f" · last {detail.window_responses:,} responses · finish reasons: {reasons or '—'}"
            ),
        )
        yield Static(title, id="dataset-title")
        if rates := window_rates_line(self.progress):
            yield Static(literal(rates), id="dataset-rates")
        if truncated := truncation_line(self.progress):
            yield Static(literal(truncated), id="dataset-truncated")
        if generation := generation_line(detail):
            yield Static(literal(generation), id="dataset-generation")
        if shares := record_shares_line(detail.api_usage):
            yield Static(literal(shares), id="dataset-api-usage")
        with VerticalScroll(id="dataset-charts"):
            yield Static(histogram_text(detail), id="dataset-histogram")
            yield TokensOverTime(detail)
        recent: DataTable[Text | str] = DataTable(id="dataset-recent", cursor_type="row")
        recent.add_columns("id", "tokens", "finish", "latency")
        for item in reversed(detail.recent):
            latency = f"{item.latency_s:.1f} s" if item.latency_s is not None else "—"
            recent.add_row(
                literal(item.id),
                f"{item.completion_tokens:,}",
                literal(item.finish_reason),
                latency,
            )
        yield recent
        errors = "\n".join(
            sanitise(f"{e.id}: {e.reason}") + (" (for good)" if e.permanent else "")
            for e in detail.errors
        )
        yield Static(literal_lines(errors or "no errors"), id="dataset-errors")
        yield KeyFooter()

    def on_mount(self) -> None:
        """The latest responses have the focus (the charts scroll when tabbed to)."""
        self.query_one("#dataset-recent").focus()

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)
