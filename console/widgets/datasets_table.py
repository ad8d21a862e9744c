"""Datasets: progress against budget, rate, ETA with range, projected overrun, status."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from agent.protocol import DatasetProgress
from console.model import dataset_row

COLUMNS = ("dataset", "responses", "budget", "tokens", "rate", "ETA", "overrun", "status")
STATUS_STYLE = {
    "over budget": "bold red",
    "stalled": "yellow",
    "running": "green",
    "complete": "cyan",
}


class DatasetsTable(DataTable[Text | str]):
    """One row per dataset, updated in place."""

    def on_mount(self) -> None:
        """Columns, and whole-row selection."""
        self.cursor_type = "row"
        for column in COLUMNS:
            self.add_column(column, key=column)

    def show(self, datasets: tuple[DatasetProgress, ...]) -> None:
        """Put `datasets` on screen, keeping the cursor where it was."""
        names = [d.name for d in datasets]
        if [row.value for row in self.rows] != names:
            self.clear()
            for name in names:
                self.add_row(*([""] * len(COLUMNS)), key=name)
        for progress in datasets:
            row = dataset_row(progress)
            cells = (
                row.name,
                row.responses,
                row.budget_bar,
                row.tokens,
                row.rate,
                row.eta,
                row.overrun,
            )
            for column, value in zip(COLUMNS, cells, strict=False):
                self.update_cell(progress.name, column, value)
            overrun_style = "bold yellow" if progress.projected_overrun_tokens else ""
            self.update_cell(progress.name, "overrun", Text(row.overrun, style=overrun_style))
            self.update_cell(
                progress.name, "status", Text(row.status, style=STATUS_STYLE.get(row.status, ""))
            )
