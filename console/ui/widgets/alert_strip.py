"""The alerts of the host on screen, worst first, one line each."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from agent.protocol import Alert
from console.model.roles import ALERT_ROLES
from console.model.safe_text import sanitise
from console.ui.themes import in_role

ORDER = {"error": 0, "warning": 1, "info": 2}


class AlertStrip(Static):
    """Alerts as a strip; empty when all is well."""

    def show(self, alerts: tuple[Alert, ...]) -> None:
        """Render `alerts`."""
        text = Text()
        for alert in sorted(alerts, key=lambda a: ORDER.get(a.severity, 3)):
            text.append_text(in_role(f"{alert.severity}: ", ALERT_ROLES[alert.severity]))
            text.append(sanitise(alert.message) + "\n")
        self.update(text if alerts else in_role("no alerts", "muted"))
        self.set_class(bool(alerts), "-alerting")
