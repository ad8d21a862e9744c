"""`?`: every command, from the same table the bindings and the palette use."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable

from console.ui.commands import COMMANDS


class HelpScreen(ModalScreen[None]):
    """A table of keys and what they do."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        """One row per command."""
        table: DataTable[str] = DataTable(id="help-table", cursor_type="row")
        table.add_columns("key", "does")
        for command in COMMANDS:
            table.add_row(command.key.replace("question_mark", "?"), command.description)
        table.add_row(":  ctrl+p", "Command palette")
        yield table
