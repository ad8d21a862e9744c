"""The drafter panel: the evaluation's verdict (green when faster, red when slower) and the export."""

from __future__ import annotations

from textual.widgets import Static

from agent.protocol import DrafterEvaluation, ExportSummary
from console.model.drafter_view import drafter_text
from console.model.safe_text import literal_lines


class DrafterPanel(Static):
    """Hidden until there is an evaluation or an export to show."""

    def show(self, evaluation: DrafterEvaluation | None, export: ExportSummary | None) -> None:
        """Render the latest reports."""
        text = drafter_text(evaluation, export)
        self.set_class(bool(text), "-shown")
        self.set_class(evaluation is not None and evaluation.slower, "-slower")
        flagged = export is not None and export.roundtrip_flagged
        self.set_class(flagged, "-flagged")
        self.border_title = "drafter"
        self.update(literal_lines(text))
