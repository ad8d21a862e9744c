"""`?`: every key of the screen it was opened over, from the table its bindings come from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable

from console.ui.commands import Command, key_label


class HelpScreen(ModalScreen[None]):
    """A table of keys and what they do."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, commands: tuple[Command, ...]) -> None:
        super().__init__()
        self.commands = commands
        """The keys that act on the screen below, its own first."""

    def compose(self) -> ComposeResult:
        """One row per command."""
        table: DataTable[str] = DataTable(id="help-table", cursor_type="row")
        table.add_columns("key", "does")
        for command in self.commands:
            table.add_row(key_label(command.key), command.description)
        table.add_row(":  ctrl+p", "Command palette")
        yield table
