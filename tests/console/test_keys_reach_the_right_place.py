"""Keys act where the user meant: on the host they were looking at, and ctrl+p opens the palette."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.widgets import Button

from agent.protocol import (
    Event,
    FilesHashResult,
    FileState,
    HelloResult,
    InstallResult,
)
from console.config import DeployMapping, HostConfig, SshTarget
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.deploy import DeployScreen
from tests.support.fixed_app import SIZE, never
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent, scripted, stops
from tests.support.shown_app import up_with
from tests.support.toasts import toasts


def called(agent: ScriptedAgent, method: str) -> list[str]:
    return [request.method for request in agent.requests if request.method == method]


def palette_highlights(app: ConsoleApp, text: str) -> bool:
    """The palette (it searches in a worker) has found `text` and highlights it."""
    found = app.screen.query(CommandList)
    if not found or found.first().highlighted is None:
        return False
    listing = found.first()
    assert listing.highlighted is not None
    return text in str(listing.get_option_at_index(listing.highlighted).prompt)


def with_a_deployed_file(name: str, remote: str) -> ScriptedAgent:
    hello = HelloResult(1, "0.1.0", "", 1, name, NOW)
    results = {
        "files.hash": FilesHashResult((FileState(remote, "0" * 64),)),
        "files.rollback": InstallResult(remote, "1" * 64, "0" * 64, None),
    }
    return ScriptedAgent(hello, results, file_content=b"old\n")


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


async def test_a_rollback_asked_on_the_deploy_screen_goes_to_the_host_it_shows(
    tmp_path: Path,
) -> None:
    local, remote = tmp_path / "run.py", "/remote/run.py"
    local.write_text("new\n")
    first, second = with_a_deployed_file("a", remote), with_a_deployed_file("b", remote)
    configs = {
        name: HostConfig(name, SshTarget(name), deploy=(DeployMapping(local, remote),))
        for name in ("a", "b")
    }
    app = ConsoleApp({"a": first.open, "b": second.open}, clock=lambda: NOW, host_configs=configs)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: all(v.state.status == "up" for v in app.views.values()))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeployScreen))
        app.show_host("b")  # the deploy screen still shows a's files
        await pilot.press("b")
        await wait_for(
            pilot, lambda: bool(called(first, "files.rollback") or called(second, "files.rollback"))
        )
        await pilot.pause(0.2)
        assert (called(first, "files.rollback"), called(second, "files.rollback")) == (
            ["files.rollback"],
            [],
        )


async def test_the_palette_asks_what_the_key_asks_on_the_screen_it_was_opened_over() -> None:
    agent = scripted("a")
    app = ConsoleApp({"a": agent.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await up_with(pilot, agent, SNAPSHOT, "a")
        app.screen.query_one("#jobs").focus()
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"Stop job")
        await wait_for(pilot, lambda: palette_highlights(app, "Stop job"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.query_one("#confirm", Button).press()
        await wait_for(pilot, lambda: bool(stops(agent)))


async def test_a_key_on_a_host_with_no_data_yet_acts_on_nothing_left_from_the_last_host() -> None:
    first, second = scripted("a"), scripted("b")
    app = ConsoleApp({"a": first.open, "b": second.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: all(v.state.status == "up" for v in app.views.values()))
        first.push(Event("snapshot", SNAPSHOT))
        await wait_for(pilot, lambda: app.views["a"].snapshot is not None)
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen)
        dashboard.query_one("#jobs").focus()
        app.show_host("b")
        await wait_for(pilot, lambda: dashboard.host == "b")
        await pilot.press("k")
        await wait_for(pilot, lambda: any("select a job first" in m for m in toasts(app)))
        assert app.screen is dashboard
