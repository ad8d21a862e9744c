"""Refreshes keep each table's selection and scroll position, so k, R and l act on the row in view.

The jobs table's cursor once jumped to the top on every snapshot (and the datasets table's view
scrolled back), so a key acted on a row the user could no longer see.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.ui.messages import SnapshotReceived
from tests.support.fixed_app import show_fixed
from tests.support.sample_snapshot import NOW, ROWS, with_many_rows
from tests.support.screen import wait_for
from tests.support.shown_app import shown_app


@pytest.mark.parametrize("table_id", ["#jobs", "#datasets"])
@pytest.mark.slow
async def test_a_refresh_keeps_the_cursor_and_the_scroll_of_the_table(table_id: str) -> None:
    async with shown_app(show_fixed, (150, 42)) as (app, pilot):
        app.post_message(SnapshotReceived("gpu", with_many_rows(NOW)))
        table = app.screen.query_one(table_id, DataTable)
        await wait_for(pilot, lambda: table.row_count == ROWS)
        table.focus()
        table.move_cursor(row=ROWS - 5, animate=False)
        await wait_for(pilot, lambda: table.scroll_y > 0)
        table.scroll_to(
            y=table.scroll_y - 3, animate=False
        )  # the wheel moves the view, not the cursor
        await pilot.pause()
        chosen, scrolled = (
            table.coordinate_to_cell_key(table.cursor_coordinate).row_key,
            table.scroll_y,
        )
        for tick in range(1, 4):
            app.post_message(SnapshotReceived("gpu", with_many_rows(NOW + tick)))
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key == chosen
        assert table.scroll_y == scrolled
