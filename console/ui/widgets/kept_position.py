"""Refilling a table without losing the user's place: the row under the cursor and the view.

A table refreshed from each snapshot is cleared and filled again; `DataTable.clear` puts the
cursor on the first row and scrolls to the top, so without this a key pressed a moment later
acts on a row the user cannot see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.widgets import DataTable


def refill(table: DataTable[Any], fill: Callable[[], None]) -> None:
    """Clear `table`, `fill` it, and put back the cursor (by row key) and the scroll offset."""
    had_rows = table.row_count > 0
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key if had_rows else None
    row, x, y = table.cursor_row, table.scroll_x, table.scroll_y
    table.clear()
    fill()
    if not table.row_count:
        return
    if key is not None and key in table.rows:
        row = table.get_row_index(key)
    table.move_cursor(row=min(row, table.row_count - 1), scroll=not had_rows)
    if had_rows:  # the new rows are measured on the next refresh: scroll back after it
        table.call_after_refresh(table.scroll_to, x, y, animate=False, immediate=True)
