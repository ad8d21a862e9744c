"""Warnings wait while a modal is open; errors never do (toasts drew over R's modal)."""

from __future__ import annotations

from textual.app import App
from textual.screen import ModalScreen

from agent.protocol import Alert
from console.ui.alert_toasts import AlertToasts
from tests.support.screen import wait_for
from tests.support.toasts import toasts as shown_toasts


class Host(App[None]):
    pass


async def test_a_warning_waits_for_the_modal_and_an_error_does_not() -> None:
    app = Host()
    async with app.run_test(notifications=True) as pilot:
        toasts = AlertToasts(app)
        await app.push_screen(ModalScreen())
        toasts.heard("gpu", [Alert("projected_overrun", "warning", "B3 heads past", "B3"),
                             Alert("over_budget", "error", "B3 is past", "B3")])  # fmt: skip
        await pilot.pause(0.3)
        shown = shown_toasts(app)
        assert any("B3 is past" in m for m in shown)
        assert not any("B3 heads past" in m for m in shown), "held while the modal is open"
        await app.pop_screen()
        await wait_for(pilot, lambda: any("B3 heads past" in m for m in shown_toasts(app)), 10)


def test_an_app_with_no_screen_has_no_modal_open() -> None:
    """A snapshot that came while the app was quitting raised ScreenStackError (CI saw three)."""
    assert AlertToasts(Host())._modal_open() is False
