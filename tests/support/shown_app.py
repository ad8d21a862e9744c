"""The console app running, once it has been shown a host: the fixed app (`tests.support.fixed_app`)
the sample host, or an app over a scripted agent (`tests.support.scripted_agent`) its snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

from textual.pilot import Pilot

from agent.protocol import Event, Snapshot
from console.ui.app import ConsoleApp
from tests.support.fixed_app import SIZE, fixed_app, show_fixed
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent


@asynccontextmanager
async def shown_app(
    show: Callable[[Pilot[Any]], Awaitable[None]] = show_fixed,
    size: tuple[int, int] = SIZE,
    notifications: bool = False,
) -> AsyncIterator[tuple[ConsoleApp, Pilot[Any]]]:
    """The fixed app at `size`, and its pilot, once `show` has shown it what a link would say."""
    app = fixed_app()
    async with app.run_test(size=size, notifications=notifications) as pilot:
        await show(pilot)
        yield app, pilot


async def up_with(
    pilot: Pilot[Any], agent: ScriptedAgent, snapshot: Snapshot, host: str = "gpu"
) -> None:
    """Once the app's link to `agent` (its host `host`) is up, `agent` sends `snapshot`; until
    the app has it."""
    app = cast(ConsoleApp, pilot.app)
    await wait_for(pilot, lambda: app.views[host].state.status == "up")
    agent.push(Event("snapshot", snapshot))
    await wait_for(pilot, lambda: app.views[host].snapshot is not None)
