"""Rings the bell and sends a desktop notification on each new critical alert, once.

The toast is easy to miss when the terminal is in another window; a bell and a desktop
notification are not. Each critical alert rings once while it stays raised, however many
snapshots repeat it and across reconnects; one that clears and comes back rings again.
`[console] bell` and `desktop_notify` turn either off.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App

from agent.protocol import Snapshot
from console.config import ConsoleSettings
from console.model.alarm import AlertKey, alarm_text, critical_keys

Write = Callable[[str], None]


def terminal_writer(app: App[None]) -> Write:
    """Writes straight to the app's terminal, as `App.bell` does; nothing when headless."""

    def write(text: str) -> None:
        driver = app._driver  # Textual has no public call for raw escapes but `bell`
        if text and not app.is_headless and driver is not None:
            driver.write(text)

    return write


class Alarm:
    """Hears every host's snapshots and writes the alarm for critical alerts not rung yet."""

    def __init__(self, settings: ConsoleSettings, write: Write) -> None:
        self.settings = settings
        self.write = write
        self._raised: dict[str, set[AlertKey]] = {}

    def heard(self, host: str, snapshot: Snapshot) -> None:
        """Ring for each critical alert of `snapshot` that was not raised in the host's last one."""
        now = critical_keys(host, snapshot.alerts)
        before = self._raised.get(host, set())
        self._raised[host] = set(now)
        for key, alert in now.items():
            if key not in before:
                self.write(
                    alarm_text(
                        host, alert, bell=self.settings.bell, desktop=self.settings.desktop_notify
                    )
                )
