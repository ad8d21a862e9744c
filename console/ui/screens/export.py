"""`X`: the latest export's quality report, one row per dataset, and where the round trip broke."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from agent.protocol import ExportSummary
from console.model.drafter_view import EXPORT_COLUMNS, export_line, export_notes, export_row
from console.model.safe_text import literal, literal_lines
from console.ui.commands import EXPORT_COMMANDS, bindings
from console.ui.themes import SKIN
from console.ui.widgets.key_footer import KeyFooter


class ExportScreen(Screen[None]):
    """The quality report the agent read from the export's folder."""

    KEYS = EXPORT_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, export: ExportSummary) -> None:
        super().__init__()
        self.host = host
        self.export = export

    def compose(self) -> ComposeResult:
        """Summary line, table, notes."""
        title = Text.assemble(literal(self.host, "bold"), " · ", literal(export_line(self.export)))
        yield Static(title, id="export-title")
        table: DataTable[Text | str] = DataTable(id="export-table", cursor_type="row")
        table.add_columns(*EXPORT_COLUMNS)
        for quality in self.export.datasets:
            row = export_row(quality)
            style = SKIN["critical" if quality.roundtrip_flagged else "plain"]
            table.add_row(*(literal(cell) for cell in row[:-1]), Text(row[-1], style=style))
        yield table
        yield Static(literal_lines(export_notes(self.export)), id="export-notes")
        yield KeyFooter()

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)
