"""The model server: health, model, load and a sparkline of generation throughput.

A hosted API has no load to show: its rate-limit state and spend, from the datasets, instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from agent.protocol import DatasetProgress, JobInfo, ServerStats
from console.model.api_usage_view import hosted_lines
from console.model.formatting import HEALTH, server_text, starting_server
from console.model.roles import HEALTH_ROLES
from console.model.safe_text import literal, literal_lines
from console.ui.themes import SKIN


class ServerPanel(Vertical):
    """Server health and load, with the throughput of the last minutes."""

    def compose(self) -> ComposeResult:
        """A text block and a sparkline."""
        yield Static(id="server-text")
        yield Sparkline([], id="server-throughput")

    def show(
        self, server: ServerStats | None, throughput: list[float],
        datasets: Sequence[DatasetProgress] = (), now: float = 0.0,
        jobs: Sequence[JobInfo] = (),
    ) -> None:  # fmt: skip
        """Render the latest reading (a hosted API's with its datasets' 429s and spend at `now`).

        A server job still within its start grace makes a down reading "starting".
        """
        starting = starting_server(jobs, now)
        text = literal_lines(server_text(server, starting)) if starting else _with_health(server)
        if server is not None and server.hosted:
            text.append("\n" + "\n".join(hosted_lines(datasets, now)))
        self.query_one("#server-text", Static).update(text)
        # All zero is drawn as a floor, not as one full-height bar: nothing is being generated.
        self.query_one("#server-throughput", Sparkline).data = throughput if any(throughput) else []

    def show_nothing(self, why: str) -> None:
        """No reading of this host at all: say `why`, with an empty sparkline."""
        self.query_one("#server-text", Static).update(literal(why))
        self.query_one("#server-throughput", Sparkline).data = []


def _with_health(server: ServerStats | None) -> Text:
    """The server's text, never markup, with its health word in colour on the first line."""
    text = literal_lines(server_text(server))
    if server is not None and server.healthy is not None:
        word = HEALTH[server.healthy]
        at = text.plain.split("\n", 1)[0].find(f": {word}") + 2
        if at >= 2:
            text.stylize(SKIN[HEALTH_ROLES[server.healthy]], at, at + len(word))
    return text
