"""A table whose lower-priority columns fold away when its width cannot hold them all.

Rows are given as text per column; the table keeps the last rows it was given, so a resize
shows them again with the columns the new width holds, and each refill keeps the user's place.
One column may take the room the others leave (STRETCH), its text cut with an ellipsis; a table
may say in its bottom border how many rows are out of view (SCROLL_HINT).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from console.model.columns import (
    columns_that_fit,
    content_widths,
    stretched_width,
    with_stretch_min,
)
from console.model.scroll_hint import rows_out_of_view
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
    STRETCH: ClassVar[str] = ""
    """The column that takes the width the others leave, cut with an ellipsis; "": none."""
    SCROLL_HINT: ClassVar[bool] = False
    """Say in the bottom border how many rows are above and below the view."""
    _rows: Sequence[Row] = ()
    _stretch_width = 0
    _note: Text | str = ""

    def on_mount(self) -> None:
        """Whole-row selection."""
        self.cursor_type = "row"

    def on_resize(self, _: events.Resize) -> None:
        """Show the rows again with the columns the new width holds."""
        self.fill_rows(self._rows)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolled: the count of rows out of view changed."""
        super().watch_scroll_y(old_value, new_value)
        if self.SCROLL_HINT:
            self._show_subtitle()

    def show_note(self, note: Text | str) -> None:
        """Put `note` in the bottom border (before the count of rows out of view, if any)."""
        self._note = note
        if self.SCROLL_HINT:
            self._show_subtitle()
        else:
            self.border_subtitle = note

    def fill_rows(self, rows: Sequence[Row]) -> None:
        """Put `rows` on screen, keeping the cursor's row and the scroll position.

        The same rows in the same order are updated in place (the cursor never moves); others
        refill the table and put the user's place back.
        """
        self._rows = rows
        shown, stretch_width = self._fitting(rows)
        same_columns = [str(key.value) for key in self.columns] == shown
        same_columns = same_columns and stretch_width == self._stretch_width
        self._stretch_width = stretch_width
        if same_columns and [r.key for r in rows] == [key.value for key in self.rows]:
            self._update(rows, shown)
        else:
            refill(self, lambda: self._fill(rows, shown, same_columns))
        if self.SCROLL_HINT:
            self.call_after_refresh(self._show_subtitle)

    def _fitting(self, rows: Sequence[Row]) -> tuple[list[str], int]:
        """The columns that fit, and the stretching column's width (0: none)."""
        plain = [[cell.plain if isinstance(cell, Text) else cell for cell in r.cells] for r in rows]
        widths = content_widths(self.COLUMNS, plain)
        available = self._available_width(len(rows))
        if not self.STRETCH or available <= 0:
            return columns_that_fit(widths, available, self.FOLD_ORDER), 0
        shown = columns_that_fit(with_stretch_min(widths, self.STRETCH), available, self.FOLD_ORDER)
        return shown, stretched_width(widths, shown, self.STRETCH, available)

    def _available_width(self, rows: int) -> int:
        """The width the columns get, less the vertical scrollbar that `rows` rows will need."""
        width = self.scrollable_content_region.width
        if self.STRETCH and rows + self.header_height > self.scrollable_content_region.height:
            width -= 0 if self.show_vertical_scrollbar else self.styles.scrollbar_size_vertical
        return width

    def _cell(self, row: Row, column: str) -> Text | str:
        cell = row.cells[self.COLUMNS.index(column)]
        if column != self.STRETCH or not self._stretch_width:
            return cell
        text = cell.copy() if isinstance(cell, Text) else Text(cell)
        text.truncate(self._stretch_width, overflow="ellipsis")
        return text

    def _update(self, rows: Sequence[Row], shown: list[str]) -> None:
        """Only the cells that changed: each update has the table measure its columns again."""
        for row in rows:
            for column in shown:
                cell = self._cell(row, column)
                if self.get_cell(row.key, column) != cell:
                    self.update_cell(row.key, column, cell, update_width=True)

    def _fill(self, rows: Sequence[Row], shown: list[str], same_columns: bool) -> None:
        if not same_columns:
            self.clear(columns=True)
            for column in shown:
                width = self._stretch_width if column == self.STRETCH else None
                self.add_column(column, key=column, width=width or None)
        for row in rows:
            self.add_row(*(self._cell(row, column) for column in shown), key=row.key)

    def _show_subtitle(self) -> None:
        """The note, then the rows out of view."""
        in_view = self.scrollable_content_region.height - self.header_height
        hint = rows_out_of_view(self.row_count, round(self.scroll_y), in_view)
        parts = [part for part in (self._note, hint) if part]
        self.border_subtitle = Text(" · ").join(Text(p) if isinstance(p, str) else p for p in parts)
