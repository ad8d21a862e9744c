"""The alerts of the host on screen, worst first, one line each."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from agent.protocol import Alert
from console.model.safe_text import sanitise

ORDER = {"error": 0, "warning": 1, "info": 2}
STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class AlertStrip(Static):
    """Alerts as a strip; empty when all is well."""

    def show(self, alerts: tuple[Alert, ...]) -> None:
        """Render `alerts`."""
        text = Text()
        for alert in sorted(alerts, key=lambda a: ORDER.get(a.severity, 3)):
            text.append(f"{sanitise(alert.severity)}: ", style=STYLE.get(alert.severity, ""))
            text.append(sanitise(alert.message) + "\n")
        self.update(text if alerts else Text("no alerts", style="dim"))
        self.set_class(bool(alerts), "-alerting")
