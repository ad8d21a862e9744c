"""The console app showing the sample host (`tests.support.sample_snapshot`) with a fixed clock.

It has no link: the tests post what a link would say, so a picture only changes when a screen
does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.pilot import Pilot

from console.link.agent_link import AgentLink
from console.link.host_connection import LinkState
from console.ui.app import ConsoleApp
from console.ui.messages import LinkChanged, SnapshotReceived
from tests.support.sample_snapshot import CROWDED, NOW, at_rate

SIZE = (150, 42)
SIZES = [(80, 24), (120, 40), (200, 60)]
"""Small, usual and large terminals."""


async def never() -> AgentLink:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def fixed_app(theme: str = "textual-dark") -> ConsoleApp:
    return ConsoleApp({"gpu": never}, clock=lambda: NOW, theme=theme, monotonic=lambda: NOW)


async def show_fixed(pilot: Pilot[Any]) -> None:
    """The app hears what a link would say: up, then five snapshots (the last one SNAPSHOT)."""
    app = pilot.app
    await pilot.pause()  # the link's first "connecting" state is in before the fixed one
    app.post_message(
        LinkChanged(LinkState("gpu", "up", latency_ms=0.4, agent_version="0.1.0", since=NOW))
    )
    for rate in (7_000.0, 7_200.0, 7_400.0, 7_300.0, 7_400.0):
        app.post_message(SnapshotReceived("gpu", at_rate(rate)))
        await pilot.pause()  # one at a time: a newer snapshot replaces one still queued
    app.clear_notifications()  # the alerts' toasts: the picture is of the screen under them
    await pilot.pause()


async def show_crowded(pilot: Pilot[Any]) -> None:
    """The sample host with eight datasets and a training run."""
    await show_fixed(pilot)
    pilot.app.post_message(SnapshotReceived("gpu", CROWDED))
    await pilot.pause(0.3)
    pilot.app.clear_notifications()
    await pilot.pause()
