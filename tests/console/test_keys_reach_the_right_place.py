"""Keys act where the user meant: on the host they were looking at, and ctrl+p opens the palette."""

from __future__ import annotations

from textual.command import CommandPalette

from console.ui.app import ConsoleApp
from console.ui.screens.dashboard import DashboardScreen
from tests.console.test_hostile_text import wait_for
from tests.console.test_snapshots import NOW, SIZE, never


async def test_ctrl_p_opens_the_command_palette_on_the_dashboard() -> None:
    app = ConsoleApp({"gpu": never}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
