"""The drafter panel: the evaluation's verdict (green when faster, red when slower) and the export."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import Static

from agent.protocol import DrafterCheck, DrafterEvaluation, ExportSummary
from console.model.drafter_view import drafter_text
from console.model.safe_text import literal


class DrafterPanel(Static):
    """Hidden until there is an evaluation or an export to show.

    A level's figures are fitted to the panel's width (two lines where one is too wide); a line
    still too wide is cut with an ellipsis, never wrapped into the next level's. The verdict and
    the export's line are sentences: they wrap.
    """

    _shown: tuple[DrafterEvaluation | None, ExportSummary | None, DrafterCheck | None] = (
        None, None, None,
    )  # fmt: skip

    def show(
        self, evaluation: DrafterEvaluation | None, export: ExportSummary | None,
        check: DrafterCheck | None = None,
    ) -> None:  # fmt: skip
        """Render the latest reports."""
        self._shown = (evaluation, export, check)
        self.set_class(bool(drafter_text(evaluation, export, check=check)), "-shown")
        self.set_class(evaluation is not None and evaluation.slower, "-slower")
        flagged = (export is not None and export.roundtrip_flagged) or (
            check is not None and check.ok is False
        )
        self.set_class(flagged, "-flagged")
        self.border_title = "drafter"
        self._render_lines()

    def on_resize(self, _: events.Resize) -> None:
        """Fit the levels to the new width."""
        self._render_lines()

    def _render_lines(self) -> None:
        width = self.content_size.width or None
        evaluation, export, check = self._shown
        text = drafter_text(evaluation, export, width, self.content_size.height or None, check)
        self.update(Text("\n").join(_line(line, width) for line in text.splitlines()))


def _line(line: str, width: int | None) -> Text:
    """One line of host text; an indented one (a level's figures) is cut, not wrapped."""
    text = literal(line)
    if width and line.startswith(" "):
        text.truncate(width, overflow="ellipsis")
    return text
