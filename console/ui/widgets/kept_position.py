"""Refilling a table without losing the user's place: the row under the cursor and the view.

A table refreshed from each snapshot is cleared and filled again; `DataTable.clear` puts the
cursor on the first row and scrolls to the top, so without this a key pressed a moment later
acts on a row the user cannot see. A refill that moves the cursor's row (a re-sort) scrolls just
enough to keep that row in view, if it was in view before.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from textual.widgets import DataTable

_pending: weakref.WeakKeyDictionary[DataTable[Any], tuple[float, float, bool]] = (
    weakref.WeakKeyDictionary()
)
"""Scroll offsets still to put back, and whether the cursor's row was in view: a refill before
the last one's restore keeps its target."""


def refill(table: DataTable[Any], fill: Callable[[], None]) -> None:
    """Clear `table`, `fill` it, and put back the cursor (by row key) and the scroll offset."""
    had_rows = table.row_count > 0
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key if had_rows else None
    row = table.cursor_row
    place = _pending.get(
        table, (table.scroll_x, table.scroll_y, had_rows and _cursor_in_view(table))
    )
    table.clear()
    fill()
    if not table.row_count:
        return
    if key is not None and key in table.rows:
        row = table.get_row_index(key)
    table.move_cursor(row=min(row, table.row_count - 1), scroll=not had_rows)
    if had_rows:  # the new rows are measured on the next refresh: scroll back after it
        _pending[table] = place
        table.call_after_refresh(_restore, table)


def _restore(table: DataTable[Any]) -> None:
    place = _pending.pop(table, None)
    if place is None:
        return
    x, y, follow_cursor = place
    table.scroll_to(x, y, animate=False, immediate=True)
    if follow_cursor:
        table.move_cursor(row=table.cursor_row, animate=False)  # scrolls only if out of view


def _cursor_in_view(table: DataTable[Any]) -> bool:
    """Whether the cursor's row is on screen (rows one line high, below the header)."""
    rows_in_view = table.scrollable_content_region.height - table.header_height
    return table.scroll_y <= table.cursor_row < table.scroll_y + rows_in_view
