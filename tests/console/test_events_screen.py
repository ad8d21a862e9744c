"""`e` shows the host's timeline: what the agent recorded, whether or not a console watched."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import DataTable

from agent.protocol import PipelineConfig
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.events import EventsScreen
from tests.support.datasets import response_line
from tests.support.local_app import SIZE, make_app
from tests.support.screen import wait_for

DEADLINE_S = 30.0


def kinds_shown(screen: EventsScreen) -> list[str]:
    table = screen.query_one("#events-table", DataTable)
    return [str(table.get_row_at(row)[2]) for row in range(table.row_count)]


async def test_the_events_screen_shows_the_agent_start_and_a_budget_reached(
    tmp_path: Path, state_dir: Path, sample_root: Path, sample_pipeline: PipelineConfig
) -> None:
    app = make_app(state_dir, sample_pipeline)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is not None)
        with (sample_root / "B2_ultrachat" / "raw_responses.jsonl").open("a") as handle:
            handle.write(response_line("p0", 1200))
        deadline, kinds = time.monotonic() + DEADLINE_S, list[str]()
        while "budget_reached" not in kinds:  # recorded on the agent's own schedule
            assert time.monotonic() < deadline, f"the events screen showed only {kinds}"
            await pilot.press("e")
            screen = app.screen
            assert isinstance(screen, EventsScreen)
            await wait_for(pilot, lambda: bool(kinds_shown(screen)))  # noqa: B023
            kinds = kinds_shown(screen)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        assert kinds[0] == "agent_started"
