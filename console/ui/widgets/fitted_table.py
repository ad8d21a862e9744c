"""A table whose lower-priority columns fold away when its width cannot hold them all.

Rows are given as text per column; the table keeps the last rows it was given, so a resize
shows them again with the columns the new width holds, and each refill keeps the user's place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from console.model.columns import columns_that_fit, content_widths
from console.ui.widgets.kept_position import refill


@dataclass(frozen=True, slots=True)
class Row:
    """One row: its key and a cell per column, in the table's column order."""

    key: str
    cells: tuple[Text | str, ...]


class FittedTable(DataTable[Text | str]):
    """Columns named by COLUMNS; the ones in FOLD_ORDER fold away first to last as it narrows."""

    COLUMNS: ClassVar[tuple[str, ...]] = ()
    FOLD_ORDER: ClassVar[tuple[str, ...]] = ()
    _rows: Sequence[Row] = ()

    def on_mount(self) -> None:
        """Whole-row selection."""
        self.cursor_type = "row"

    def on_resize(self, _: events.Resize) -> None:
        """Show the rows again with the columns the new width holds."""
        self.fill_rows(self._rows)

    def fill_rows(self, rows: Sequence[Row]) -> None:
        """Put `rows` on screen, keeping the cursor's row and the scroll position.

        The same rows in the same order are updated in place (the cursor never moves); others
        refill the table and put the user's place back.
        """
        self._rows = rows
        shown = self._fitting(rows)
        same_columns = [str(key.value) for key in self.columns] == shown
        if same_columns and [r.key for r in rows] == [key.value for key in self.rows]:
            self._update(rows, shown)
        else:
            refill(self, lambda: self._fill(rows, shown, same_columns))

    def _fitting(self, rows: Sequence[Row]) -> list[str]:
        plain = [[cell.plain if isinstance(cell, Text) else cell for cell in r.cells] for r in rows]
        widths = content_widths(self.COLUMNS, plain)
        return columns_that_fit(widths, self.scrollable_content_region.width, self.FOLD_ORDER)

    def _update(self, rows: Sequence[Row], shown: list[str]) -> None:
        for row in rows:
            for column in shown:
                cell = row.cells[self.COLUMNS.index(column)]
                self.update_cell(row.key, column, cell, update_width=True)

    def _fill(self, rows: Sequence[Row], shown: list[str], same_columns: bool) -> None:
        if not same_columns:
            self.clear(columns=True)
            for column in shown:
                self.add_column(column, key=column)
        indexes = [self.COLUMNS.index(column) for column in shown]
        for row in rows:
            self.add_row(*(row.cells[i] for i in indexes), key=row.key)
