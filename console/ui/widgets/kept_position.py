"""Refilling a table without losing the user's place: the row under the cursor and the view.

A table refreshed from each snapshot is cleared and filled again; `DataTable.clear` puts the
cursor on the first row and scrolls to the top, so without this a key pressed a moment later
acts on a row the user cannot see.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from textual.widgets import DataTable

_pending: weakref.WeakKeyDictionary[DataTable[Any], tuple[float, float]] = (
    weakref.WeakKeyDictionary()
)
"""Scroll offsets still to put back: a refill before the last one's restore keeps its target."""


def refill(table: DataTable[Any], fill: Callable[[], None]) -> None:
    """Clear `table`, `fill` it, and put back the cursor (by row key) and the scroll offset."""
    had_rows = table.row_count > 0
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key if had_rows else None
    row = table.cursor_row
    offset = _pending.get(table, (table.scroll_x, table.scroll_y))
    table.clear()
    fill()
    if not table.row_count:
        return
    if key is not None and key in table.rows:
        row = table.get_row_index(key)
    table.move_cursor(row=min(row, table.row_count - 1), scroll=not had_rows)
    if had_rows:  # the new rows are measured on the next refresh: scroll back after it
        _pending[table] = offset
        table.call_after_refresh(_restore, table)


def _restore(table: DataTable[Any]) -> None:
    offset = _pending.pop(table, None)
    if offset is not None:
        table.scroll_to(*offset, animate=False, immediate=True)
