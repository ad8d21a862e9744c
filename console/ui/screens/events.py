"""`e`: what happened on the host, whether or not a console was attached (the agent's timeline).

"What happened" takes the width the other columns leave (at 80 columns the kind and then the
severity fold away first), cut with an ellipsis; the event under the cursor is spelt out in full
below the table.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from agent.protocol import EVENTS_LIST, EventsList, EventsParams, TimelineEvent
from console.link.agent_link import AgentLink, LinkError
from console.model.roles import EVENT_ROLES
from console.model.safe_text import literal, literal_lines
from console.model.timeline import COLUMNS, event_cells
from console.ui.commands import EVENTS_COMMANDS, bindings
from console.ui.themes import in_role
from console.ui.widgets.fitted_table import FittedTable, Row
from console.ui.widgets.key_footer import KeyFooter

SINCE_S = 24 * 3600.0


class EventsTable(FittedTable):
    """One row per event; "what happened" takes the room left."""

    COLUMNS = COLUMNS
    FOLD_ORDER = ("event", "severity", "subject")
    """The time and what happened stay; the row under the cursor is spelt out below."""
    STRETCH = "what happened"


class EventsScreen(Screen[None]):
    """The host's events of the last day, newest last; loaded when the screen opens."""

    KEYS = EVENTS_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, link: AgentLink | None) -> None:
        super().__init__()
        self.host = host
        self.link = link
        self.events: tuple[TimelineEvent, ...] = ()

    def compose(self) -> ComposeResult:
        """A title that says what is shown, the table of events, the selected one in full."""
        yield Static(literal(f"{self.host} · events of the last 24 h", "bold"), id="events-title")
        yield EventsTable(id="events-table")
        yield Static(id="events-detail")
        yield KeyFooter()

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
        self.events = found.events
        table = self.query_one(EventsTable)
        table.fill_rows([_row(index, event) for index, event in enumerate(found.events)])
        if not found.events:
            self._say("no events in the last 24 h")
        table.move_cursor(row=table.row_count - 1)

    @on(DataTable.RowHighlighted, "#events-table")
    def _spell_out(self, event: DataTable.RowHighlighted) -> None:
        """The event under the cursor, every field in full."""
        if event.row_key.value is None:
            return
        cells = event_cells(self.events[int(event.row_key.value)])
        self.query_one("#events-detail", Static).update(
            literal_lines(f"{' · '.join(cells[:-1])}\n{cells[-1]}")
        )

    def _say(self, text: str) -> None:
        self.query_one("#events-title", Static).update(literal(f"{self.host} · {text}", "bold"))

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)


def _row(index: int, event: TimelineEvent) -> Row:
    """The event's cells, host text shown literally; its severity and what happened in colour."""
    role = EVENT_ROLES.get(event.severity, "plain")
    when, severity, kind, subject, message = event_cells(event)
    cells = (literal(when), in_role(severity, role), literal(kind), literal(subject),
             in_role(message, role))  # fmt: skip
    return Row(str(index), cells)
