"""The SGLang server: health, model, load and a sparkline of generation throughput."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from agent.protocol import ServerStats
from console.model import server_text


class ServerPanel(Vertical):
    """Server health and load, with the throughput of the last minutes."""

    def compose(self) -> ComposeResult:
        """A text block and a sparkline."""
        yield Static(id="server-text")
        yield Sparkline([], id="server-throughput")

    def show(self, server: ServerStats | None, throughput: list[float]) -> None:
        """Render the latest reading."""
        self.query_one("#server-text", Static).update(server_text(server))
        self.query_one("#server-throughput", Sparkline).data = throughput or [0.0]
