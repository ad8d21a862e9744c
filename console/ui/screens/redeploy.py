"""`R`: kill, deploy and restart a job, after a modal that says exactly what will happen.

Cancel has the focus. The command that will be started again is editable (to add
`--token-budget 10000000`, say); `ctrl+d` shows the diff of the files that will be deployed.
A command holding characters that cannot be shown as they are (escapes, controls) is shown with
placeholders and cannot be edited: it restarts exactly as it was.
"""

from __future__ import annotations

import shlex

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from console.model.safe_text import literal, literal_lines, sanitise
from console.ui.intents import PendingDiffRequested


class RedeployScreen(ModalScreen[tuple[str, ...] | None]):
    """Returns the argv to start (the same or edited), or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+d", "diff", "Diff of the files"),
    ]

    def __init__(self, title: str, consequences: str, argv: tuple[str, ...]) -> None:
        super().__init__()
        self.title_text = title
        self.consequences = consequences
        self.argv = argv

    @property
    def editable(self) -> bool:
        """True when the command shows as it is, so what is edited is what will run."""
        command = shlex.join(self.argv)
        return sanitise(command) == command

    def compose(self) -> ComposeResult:
        """Title, consequences, the command, Cancel and Redeploy."""
        with Vertical(id="confirm-box"):
            yield Static(literal(self.title_text, "bold"), id="confirm-title")
            yield Static(literal_lines(self.consequences), id="confirm-text")
            if self.editable:
                yield Static("Command to start again (edit it to change this run only):")
            else:
                yield Static("Command to start again (it holds control characters, shown as "
                             "symbols: it restarts exactly as it was and cannot be edited here):")  # fmt: skip
            yield Input(
                sanitise(shlex.join(self.argv)), id="redeploy-argv", disabled=not self.editable
            )
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Kill, deploy, restart", id="confirm", variant="error")

    def on_mount(self) -> None:
        """Cancel has the focus."""
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the argv to start, or None."""
        if event.button.id != "confirm":
            _ = self.dismiss(None)
            return
        if not self.editable:
            _ = self.dismiss(self.argv)
            return
        try:
            argv = tuple(shlex.split(self.query_one(Input).value))
        except ValueError as exc:
            self.notify(f"the command does not parse: {exc}", severity="error")
            return
        _ = self.dismiss(argv or None)

    def action_cancel(self) -> None:
        """Escape cancels."""
        _ = self.dismiss(None)

    def action_diff(self) -> None:
        """Ask for the diff of what will be deployed."""
        self.post_message(PendingDiffRequested())
