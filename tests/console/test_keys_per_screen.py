"""Each screen's footer and `?` help list exactly the keys that act on that screen.

The dashboard's keys once stayed in every footer after the restructure (bound on the app as
`screen.` actions), yet did nothing on the log, deploy, dataset, pipeline and export screens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.actions import parse
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from agent.protocol import DatasetDetail, ExportSummary, ResponseSummary
from console.link.deploy import FilePlan
from console.ui.app import ConsoleApp
from console.ui.commands import APP_COMMANDS, DASHBOARD_COMMANDS, LOG_COMMANDS, key_label
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.deploy import DeployScreen
from console.ui.screens.export import ExportScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.logs import LogScreen
from console.ui.screens.pipeline import PipelineScreen
from tests.support.fixed_app import show_fixed
from tests.support.sample_snapshot import SNAPSHOT
from tests.support.screen import wait_for
from tests.support.shown_app import shown_app

DETAIL = DatasetDetail("B1", 3, (ResponseSummary("r1", 12, "stop", 0.5),), {"stop": 3},
                       (0, 64, 128), (2, 1), ())  # fmt: skip
EXPORT = ExportSummary("x-1", "/out", 4.0, 0.5, 0.99, False, 50_000, 6e6)
SCREENS: dict[str, Callable[[], Screen[None]]] = {
    "log": lambda: LogScreen("gpu", "sglang"),
    "dataset": lambda: DatasetScreen("gpu", DETAIL),
    "pipeline": lambda: PipelineScreen("gpu", SNAPSHOT),
    "export": lambda: ExportScreen("gpu", EXPORT),
    "deploy": lambda: DeployScreen("gpu", [FilePlan(Path("/l/run.py"), "/r/run.py", "a", "b")]),
}


def acting_node(app: ConsoleApp, node: DOMNode, action: str) -> tuple[DOMNode, str]:
    """The node a binding's action runs on, and the action's bare name."""
    namespace, bare, _ = parse(action)
    target = {"app": app, "screen": app.screen}.get(namespace, node)
    return target, bare


def dead_footer_keys(app: ConsoleApp) -> list[str]:
    """Keys the footer shows whose action the node they run on does not have."""
    dead = []
    for key, active in app.screen.active_bindings.items():
        target, name = acting_node(app, active.node, active.binding.action)
        if active.binding.show and not hasattr(target, f"action_{name}"):
            dead.append(f"{key} ({active.binding.description})")
    return dead


async def help_keys(app: ConsoleApp, pilot: Pilot[Any]) -> set[str]:
    """The keys the help table lists, once `?` has opened it."""
    await pilot.press("question_mark")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
    table = app.screen.query_one("#help-table", DataTable)
    return {str(table.get_row_at(index)[0]) for index in range(table.row_count)}


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_every_key_a_screen_footer_lists_acts_on_that_screen(screen: str) -> None:
    async with shown_app() as (app, pilot):
        await app.push_screen(SCREENS[screen]())
        await pilot.pause()
        assert dead_footer_keys(app) == []


async def test_every_key_the_dashboard_footer_lists_acts_on_the_dashboard() -> None:
    async with shown_app() as (app, pilot):
        for table in ("#datasets", "#jobs"):
            app.screen.query_one(table).focus()
            await pilot.pause()
            assert dead_footer_keys(app) == []


async def test_l_inside_a_log_view_opens_no_second_log_view() -> None:
    async with shown_app() as (app, pilot):
        await app.push_screen(LogScreen("gpu", "sglang"))
        depth = len(app.screen_stack)
        await pilot.press("l")
        await pilot.pause(0.2)
        assert len(app.screen_stack) == depth
        assert isinstance(app.screen, LogScreen)


async def test_help_on_the_dashboard_lists_its_keys_enter_o_and_tab_included() -> None:
    async with shown_app() as (app, pilot):
        listed = await help_keys(app, pilot)
        assert {"enter", "o", "tab"} <= listed
        assert {key_label(c.key) for c in DASHBOARD_COMMANDS} <= listed


async def test_help_on_the_log_view_lists_the_log_keys_and_none_of_the_dashboard() -> None:
    async with shown_app() as (app, pilot):
        await app.push_screen(LogScreen("gpu", "sglang"))
        listed = await help_keys(app, pilot)
        assert {key_label(c.key) for c in LOG_COMMANDS} <= listed
        dashboard_only = {key_label(c.key) for c in DASHBOARD_COMMANDS} - {
            key_label(c.key) for c in (*LOG_COMMANDS, *APP_COMMANDS)
        }
        assert listed.isdisjoint(dashboard_only)


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_help_lists_every_key_the_footer_of_each_screen_shows(screen: str) -> None:
    async with shown_app() as (app, pilot):
        await app.push_screen(SCREENS[screen]())
        await pilot.pause()
        shown = {
            key_label(active.binding.key)
            for active in app.screen.active_bindings.values()
            if active.binding.show
        }
        listed = {part for label in await help_keys(app, pilot) for part in label.split(" / ")}
        assert shown <= listed


async def test_at_80x24_the_help_says_how_many_keys_are_below_the_view() -> None:
    """It hid its last seven keys, q among them, with no sign that it scrolls."""
    async with shown_app(show_fixed, (80, 24)) as (app, pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one("#help-table", DataTable)
        await wait_for(pilot, lambda: "more ↓" in str(table.border_subtitle))
        assert "scroll" in str(table.border_title)
        table.scroll_end(animate=False)
        await wait_for(pilot, lambda: "more ↓" not in str(table.border_subtitle))
        assert "above" in str(table.border_subtitle)
