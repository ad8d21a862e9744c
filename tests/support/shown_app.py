"""The fixed console app (`tests.support.fixed_app`) running, once it has shown the sample host."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from textual.pilot import Pilot

from console.ui.app import ConsoleApp
from tests.support.fixed_app import SIZE, fixed_app, show_fixed


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
