"""`p`: the pipeline's stages in order, and the key that moves the next one on."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from agent.protocol import Snapshot
from console.model.autopilot_view import autopilot_line, stage_rows
from console.model.pipeline_view import next_stage, stages
from console.model.roles import STAGE_ROLES
from console.model.safe_text import literal
from console.ui.commands import PIPELINE_COMMANDS, bindings
from console.ui.themes import in_role
from console.ui.widgets.key_footer import KeyFooter


class PipelineScreen(Screen[None]):
    """Stages and their states, from one snapshot."""

    KEYS = PIPELINE_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, snapshot: Snapshot) -> None:
        super().__init__()
        self.host = host
        self.snapshot = snapshot

    def compose(self) -> ComposeResult:
        """A table of stages and the next step; the autopilot's stages when it is on."""
        items = stages(self.snapshot)
        upcoming = next_stage(items)
        hint = f"next: {upcoming.name} (key {upcoming.key})" if upcoming else "every stage is done"
        autopilot = self.snapshot.autopilot
        if autopilot is not None and autopilot.state in ("running", "paused"):
            hint = f"the autopilot is {autopilot.state} (A on the dashboard)"
        title = Text.assemble(literal(self.host, "bold"), f" · pipeline · {hint}")
        yield Static(title, id="pipeline-title")
        if autopilot is not None and autopilot.state != "off":
            yield Static(literal(autopilot_line(autopilot)), id="autopilot-line")
            steps: DataTable[Text | str] = DataTable(id="autopilot-table", cursor_type="none")
            steps.add_columns("autopilot stage", "state", "tries", "detail")
            for name, state, tries, detail in stage_rows(autopilot):
                steps.add_row(name, in_role(state, STAGE_ROLES[state]), tries, literal(detail))
            yield steps
        table: DataTable[Text | str] = DataTable(id="pipeline-table", cursor_type="row")
        table.add_columns("stage", "state", "detail", "key")
        for stage in items:
            table.add_row(
                stage.name,
                in_role(stage.state, STAGE_ROLES[stage.state]),
                literal(stage.detail),
                stage.key,
                key=stage.name,
            )
        yield table
        yield KeyFooter()

    def action_back(self) -> None:
        """Back to the dashboard."""
        _ = self.dismiss(None)
