"""A worker that fails is heard: its traceback in the console's log, then a toast or a new link."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button

from agent.protocol import HelloResult, StopResult
from console.config import console_log_path
from console.link.agent_link import AgentLink
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from tests.support.fixed_app import SIZE
from tests.support.sample_snapshot import JOBS, NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent
from tests.support.shown_app import up_with
from tests.support.toasts import toasts


def scripted() -> ScriptedAgent:
    hello = HelloResult(1, "0.1.0", "", 1, "gpu", NOW)
    return ScriptedAgent(hello, {"jobs.stop": StopResult(JOBS[0], "stopped")}, file_content=b"")


class UnexpectedError(Exception):
    """Stands for any exception no one expected."""


async def test_an_action_that_raises_shows_a_toast_and_logs_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, log_path = scripted(), tmp_path / "state" / "console.log"
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW, log_path=log_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, SNAPSHOT)
        link = app.connections["gpu"].link
        assert link is not None

        async def broken(*args: object, **kwargs: object) -> object:
            raise UnexpectedError("the stop's code has a bug")

        monkeypatch.setattr(link, "call", broken)
        app.screen.query_one("#jobs").focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.query_one("#confirm", Button).press()
        await wait_for(pilot, lambda: any("the stop's code has a bug" in t for t in toasts(app)))
        [toast] = [t for t in toasts(app) if "has a bug" in t]
        assert toast.startswith(f"the stop of {JOBS[0].name} failed: UnexpectedError")
    logged = log_path.read_text()
    assert "Traceback (most recent call last)" in logged
    assert "UnexpectedError: the stop's code has a bug" in logged


async def test_a_link_worker_that_raises_marks_its_host_down_then_reconnects(
    tmp_path: Path,
) -> None:
    agent, log_path = scripted(), tmp_path / "console.log"
    opened: list[int] = []

    async def opener() -> AgentLink:
        opened.append(1)
        if len(opened) == 1:
            raise UnexpectedError("the opener has a bug")
        return await agent.open()

    app = ConsoleApp({"gpu": opener}, clock=lambda: NOW, log_path=log_path)
    states: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].state.status == "down")
        states.append(app.views["gpu"].state.detail)
        await wait_for(pilot, lambda: app.views["gpu"].state.status == "up")
    assert "UnexpectedError: the opener has a bug" in states[0]
    assert "Traceback (most recent call last)" in log_path.read_text()


def test_the_log_lives_in_the_user_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert console_log_path() == tmp_path / "eagle-console" / "console.log"
