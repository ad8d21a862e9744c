"""Keys act where the user meant: on the host they were looking at, and ctrl+p opens the palette."""

from __future__ import annotations

from textual.command import CommandPalette
from textual.widgets import Button

from agent.protocol import Event, HelloResult, StopResult
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dashboard import DashboardScreen
from tests.console.scripted_agent import ScriptedAgent
from tests.console.test_hostile_text import wait_for
from tests.console.test_snapshots import JOBS, NOW, SIZE, SNAPSHOT, never

JOB = JOBS[0]


def scripted(name: str) -> ScriptedAgent:
    hello = HelloResult(1, "0.1.0", "", 1, name, NOW)
    return ScriptedAgent(hello, {"jobs.stop": StopResult(JOB, "stopped")}, file_content=b"")


def stops(agent: ScriptedAgent) -> list[str]:
    return [request.method for request in agent.requests if request.method == "jobs.stop"]


async def test_a_stop_confirmed_after_switching_host_goes_to_the_host_it_was_asked_on() -> None:
    first, second = scripted("a"), scripted("b")
    app = ConsoleApp({"a": first.open, "b": second.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: all(v.state.status == "up" for v in app.views.values()))
        for agent in (first, second):
            agent.push(Event("snapshot", SNAPSHOT))
        await wait_for(pilot, lambda: all(v.snapshot is not None for v in app.views.values()))
        assert app.current == "a"
        app.screen.query_one("#jobs").focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.show_host("b")  # a snapshot toast, a palette jump: anything may switch the host
        app.screen.query_one("#confirm", Button).press()
        await wait_for(pilot, lambda: bool(stops(first) or stops(second)))
        await pilot.pause(0.2)
        assert (stops(first), stops(second)) == (["jobs.stop"], [])


async def test_ctrl_p_opens_the_command_palette_on_the_dashboard() -> None:
    app = ConsoleApp({"gpu": never}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
