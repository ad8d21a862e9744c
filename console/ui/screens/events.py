"""`e`: what happened on the host, whether or not a console was attached (the agent's timeline)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from agent.protocol import EVENTS_LIST, EventsList, EventsParams
from console.link.agent_link import AgentLink, LinkError
from console.model.safe_text import literal
from console.model.timeline import COLUMNS, event_cells
from console.ui.commands import EVENTS_COMMANDS, bindings

SINCE_S = 24 * 3600.0


class EventsScreen(Screen[None]):
    """The host's events of the last day, newest last; loaded when the screen opens."""

    KEYS = EVENTS_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, link: AgentLink | None) -> None:
        super().__init__()
        self.host = host
        self.link = link

    def compose(self) -> ComposeResult:
        """A title that says what is shown, and the table of events."""
        yield Static(literal(f"{self.host} · events of the last 24 h", "bold"), id="events-title")
        table: DataTable[Text | str] = DataTable(id="events-table", cursor_type="row")
        table.add_columns(*COLUMNS)
        yield table
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        """Ask the agent for the timeline, off the UI's path."""
        self.load()

    @work(exclusive=True, exit_on_error=False, name="events")
    async def load(self) -> None:
        """Fill the table; a failure to ask says why in the title instead."""
        if self.link is None:
            self._say("no link to the host right now")
            return
        try:
            found: EventsList = await self.link.call(EVENTS_LIST, EventsParams(SINCE_S))
        except LinkError as exc:
            self._say(f"the events could not be read: {exc}")
            return
        table = self.query_one("#events-table", DataTable)
        for event in found.events:
            table.add_row(*(literal(cell) for cell in event_cells(event)))
        if not found.events:
            self._say("no events in the last 24 h")
        table.move_cursor(row=table.row_count - 1)

    def _say(self, text: str) -> None:
        self.query_one("#events-title", Static).update(literal(f"{self.host} · {text}", "bold"))

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)
