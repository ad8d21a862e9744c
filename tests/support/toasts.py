"""What the console app says in toasts, as a test reads it."""

from __future__ import annotations

from typing import Any

from textual.app import App

from console.ui.app import ConsoleApp


def toasts(app: App[Any]) -> list[str]:
    """The toasts `app` (any Textual app) shows now, oldest first."""
    return [str(notification.message) for notification in app._notifications]


def record_toasts(app: ConsoleApp) -> list[str]:
    """Every toast `app` is asked for from now on (each still shown), even one that is gone."""
    said: list[str] = []
    original = app.notify

    def notify(message: str, **kwargs: Any) -> None:
        said.append(message)
        original(message, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    return said
