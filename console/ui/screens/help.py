"""`?`: every key of the screen it was opened over, from the table its bindings come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable

from console.model.scroll_hint import rows_out_of_view
from console.ui.commands import Command, key_label


class KeysTable(DataTable[str]):
    """The keys, with the rows out of view in its bottom border ("+7 more ↓").

    At 80×24 the help hid its last seven keys, `q` among them, with no sign that it scrolls.
    """

    def on_mount(self) -> None:
        """Say what is out of view once laid out."""
        self.border_title = "keys · ↑↓ scroll · esc closes"
        self.call_after_refresh(self._show_hint)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolled: the rows out of view changed."""
        super().watch_scroll_y(old_value, new_value)
        self._show_hint()

    def on_resize(self) -> None:
        """A new height: another count out of view."""
        self.call_after_refresh(self._show_hint)

    def _show_hint(self) -> None:
        in_view = self.scrollable_content_region.height - self.header_height
        self.border_subtitle = rows_out_of_view(self.row_count, round(self.scroll_y), in_view)


class HelpScreen(ModalScreen[None]):
    """A table of keys and what they do."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, commands: tuple[Command, ...]) -> None:
        super().__init__()
        self.commands = commands
        """The keys that act on the screen below, its own first."""

    def compose(self) -> ComposeResult:
        """One row per command."""
        table = KeysTable(id="help-table", cursor_type="row")
        table.add_columns("key", "does")
        for command in self.commands:
            table.add_row(key_label(command.key), command.description)
        table.add_row(":  ctrl+p", "Command palette")
        yield table
