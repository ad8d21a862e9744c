"""A yes/no question about a destructive action, with Cancel focused and the consequences spelt out."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from console.model.safe_text import literal, literal_lines


class ConfirmScreen(ModalScreen[bool]):
    """Returns True only when the user presses the action's button.

    The title and the consequences name jobs, datasets and paths from the host: shown literally.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, consequences: str, action_label: str) -> None:
        super().__init__()
        self.title_text = title
        self.consequences = consequences
        self.action_label = action_label

    def compose(self) -> ComposeResult:
        """Title, what will happen, Cancel (focused) and the action."""
        with Vertical(id="confirm-box"):
            yield Static(literal(self.title_text, "bold"), id="confirm-title")
            yield Static(literal_lines(self.consequences), id="confirm-text")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button(self.action_label, id="confirm", variant="error")

    def on_mount(self) -> None:
        """Cancel has the focus: Enter alone never destroys anything."""
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the answer."""
        _ = self.dismiss(event.button.id == "confirm")

    def action_cancel(self) -> None:
        """Escape cancels."""
        _ = self.dismiss(False)
