"""Datasets: progress against budget, rate, ETA and its range, projected overrun, status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from agent.protocol import DatasetProgress
from console.model.formatting import dataset_row, live_rate
from console.model.roles import Role, dataset_role
from console.model.safe_text import literal
from console.model.truncation_view import cut_text
from console.ui.themes import in_role
from console.ui.widgets.fitted_table import FittedTable, Row

COLUMNS = ("dataset", "responses", "budget", "tokens", "rate", "ETA", "range", "overrun", "status")


SORTS: dict[str, Callable[[DatasetProgress, float | None], Any]] = {
    "dataset": lambda d, _: d.name,
    "tokens": lambda d, _: -d.tokens,
    "rate": lambda d, taken_at: (-(live_rate(d, taken_at) or 0.0), -d.tokens),
    "ETA": lambda d, _: d.eta_s if d.eta_s is not None else float("inf"),
    "overrun": lambda d, _: -(d.projected_overrun_tokens or 0),
    "status": lambda d, _: d.status,
}
"""Each sortable column's key, given a dataset and its snapshot's time."""


class DatasetsTable(FittedTable):
    """One row per dataset, updated in place; sortable by a column (o, or click its header)."""

    BINDINGS = [Binding("o", "cycle_sort", "Sort")]
    COLUMNS = COLUMNS
    FOLD_ORDER = ("range", "responses", "budget", "rate", "overrun")
    """Name, tokens of the budget, ETA and status stay at any width; the ETA's range folds first
    (it took the overrun's room on the one dataset heading past its budget)."""
    sort_by = "dataset"
    """The column the rows are ordered by."""

    def action_cycle_sort(self) -> None:
        """Sort by the next sortable column."""
        names = list(SORTS)
        self.sort_by = names[(names.index(self.sort_by) + 1) % len(names)]
        self.notify(f"datasets sorted by {self.sort_by}")

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """Clicking a sortable header sorts by it."""
        column = str(event.column_key.value)
        if column in SORTS:
            self.sort_by = column

    @property
    def selected_name(self) -> str | None:
        """The dataset under the cursor."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def show(
        self, datasets: tuple[DatasetProgress, ...], taken_at: float | None = None,
        server_up: bool = False, cut_warned: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        """Put `datasets` on screen in the chosen order, keeping the cursor on the same dataset.

        `taken_at` is their snapshot's time: a finished dataset says when it ended. `server_up`:
        the agent's probe finds the server healthy (a run waiting for it is resuming).
        `cut_warned`: the datasets the agent warns have too many answers cut at max_new_tokens.
        """
        key = SORTS[self.sort_by]
        ordered = sorted(datasets, key=lambda d: key(d, taken_at))
        rows = [_row(p, taken_at, server_up, p.name in cut_warned) for p in ordered]
        self.fill_rows(rows)


def _row(progress: DatasetProgress, taken_at: float | None, server_up: bool, warned: bool) -> Row:
    row = dataset_row(progress, taken_at, server_up)
    overrun: Role = "attention" if progress.projected_overrun_tokens else "plain"
    return Row(progress.name, (
        literal(row.name), row.responses, row.budget_bar, row.tokens, row.rate, row.eta,
        in_role(row.eta_range, "muted"), in_role(row.overrun, overrun),
        _status_cell(row.status, dataset_role(progress, server_up), cut_text(progress), warned),
    ))  # fmt: skip


def _status_cell(status: str, role: Role, cut: str, warned: bool) -> Text:
    """The status, and `· cut 12%` after it when answers were cut: loud when the agent warns."""
    cell = in_role(status, role)
    if cut:
        cell.append_text(in_role(f" · {cut}", "attention" if warned else "muted"))
    return cell
