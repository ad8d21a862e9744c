"""The dashboard at 80x24, 120x40 and 200x60: usable when small, and extra room goes to content.

At 80x24 the datasets table once showed no rows at all; at 240x70 the extra height went to empty
dataset rows while the training panel kept two lines.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable

from tests.support.fixed_app import SIZES, fixed_app, show_crowded
from tests.support.sample_snapshot import CROWDED
from tests.support.screen import wait_for
from tests.support.shown_app import shown_app

MUST_SHOW = {"dataset", "tokens", "ETA", "status"}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_at_size(snap_compare: Any, size: tuple[int, int]) -> None:
    """Eight datasets with name, tokens, ETA and status in view at every size (80x24: the rest
    scroll, lower-priority columns and the GPU/training panel folded away); at 200x60 the
    datasets take their eight rows and the training panel gets the room below."""
    assert snap_compare(fixed_app(), terminal_size=size, run_before=show_crowded)


async def test_at_80x24_every_dataset_is_reachable_with_its_key_columns() -> None:
    async with shown_app(show_crowded, (80, 24)) as (app, pilot):
        table = app.screen.query_one("#datasets", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(CROWDED.datasets))
        assert {str(key.value) for key in table.columns} >= MUST_SHOW
        assert table.scrollable_content_region.height >= 3
        shown = sum(column.get_render_width(table) for column in table.columns.values())
        assert shown <= table.scrollable_content_region.width
        table.focus()
        for _ in CROWDED.datasets:
            await pilot.press("down")
        await pilot.pause()
        last = table.cursor_row
        assert last == len(CROWDED.datasets) - 1
        assert table.scroll_y <= last < table.scroll_y + table.scrollable_content_region.height


async def test_at_200x60_the_room_goes_to_the_training_panel_not_empty_dataset_rows() -> None:
    async with shown_app(show_crowded, (200, 60)) as (app, pilot):
        table = app.screen.query_one("#datasets", DataTable)
        await wait_for(pilot, lambda: table.row_count == len(CROWDED.datasets))
        empty_rows = table.scrollable_content_region.height - 1 - table.row_count  # 1: header
        assert empty_rows <= 1
        assert app.screen.query_one("#gpus").size.height >= 10
