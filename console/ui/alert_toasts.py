"""Toasts for a host's new alerts: errors and warnings at once, news gathered for a moment.

Runs that finish together end within a few snapshots of each other; a toast per run would bury
the screen. So information (a job finished, a budget reached) waits GATHER_S for the rest of its
batch and is told grouped by kind (`console.model.toasts`); what needs the user now does not wait.

While a modal (a confirm, R's modal) is open, warnings wait for it to close: they drew over the
R modal for the demo's first two minutes. Errors never wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import App, ScreenStackError
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.timer import Timer

from agent.protocol import Alert
from console.model.toasts import Toast, alert_toasts

GATHER_S = 1.5
"""How long news waits for the rest of its batch."""
MODAL_RECHECK_S = 1.0
"""How often toasts held for a modal look whether it has closed."""


class AlertToasts:
    """Turns the new alerts of each snapshot into toasts on `app`."""

    def __init__(self, app: App[None]) -> None:
        self.app = app
        self._news: dict[str, list[Alert]] = {}
        self._timer: Timer | None = None

    def heard(self, host: str, alerts: Sequence[Alert]) -> None:
        """Toast `host`'s new `alerts`: the urgent ones now, the news once its batch is in."""
        self._show(alert_toasts(host, [a for a in alerts if a.severity != "info"]))
        news = [a for a in alerts if a.severity == "info"]
        if news:
            self._news.setdefault(host, []).extend(news)
            if self._timer is None:
                self._timer = self.app.set_timer(GATHER_S, self._flush)

    def _flush(self) -> None:
        news, self._news, self._timer = self._news, {}, None
        for host, alerts in news.items():
            self._show(alert_toasts(host, alerts))

    def _show(self, toasts: list[Toast]) -> None:
        held = [t for t in toasts if t.severity != "error"] if self._modal_open() else []
        if held:
            self.app.set_timer(MODAL_RECHECK_S, lambda: self._show(held))
        for toast in (t for t in toasts if t not in held):
            severity: SeverityLevel = "error" if toast.severity == "error" else "warning"
            self.app.notify(toast.message, severity=severity, timeout=10)

    def _modal_open(self) -> bool:
        """A modal is on top; False too while the app has no screen (starting, or quitting)."""
        try:
            return isinstance(self.app.screen, ModalScreen)
        except ScreenStackError:
            return False
