"""A log, followed live: pause with a "+N new lines" badge, search, filter, highlight, copy.

Log lines are host text: each is sanitised as it arrives, so the view, search, filter and copy all
work on what is shown, and nothing in a log reaches the terminal as a control sequence.

Memory stays bounded however long the log grows: the screen keeps the newest MAX_LINES lines.
Textual's Log widget renders only the lines in view, and new lines are written in batches a few
times a second, so a flood of thousands of lines a second never makes a key press wait.
"""

from __future__ import annotations

import collections
import re
from typing import ClassVar

from rich.highlighter import Highlighter
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Input, Log, Static

from agent.protocol import LogChunk
from console.model.packed_line import GAP, packed
from console.model.roles import Role
from console.model.safe_text import literal, sanitise
from console.ui.commands import LOG_COMMANDS, bindings
from console.ui.signals import LogChunkReceived, signals_of
from console.ui.themes import SKIN
from console.ui.widgets.key_footer import KeyFooter

MAX_LINES = 50_000
FLUSH_S = 0.1
CONTEXT = 2
"""Lines shown around each filter match."""
ERROR = re.compile(r"\b(error|exception|traceback|failed|fatal)\b", re.IGNORECASE)
WARNING = re.compile(r"\b(warn(ing)?|retry|retrying|unhealthy)\b", re.IGNORECASE)
STATS = re.compile(r"\] (Prefill|Decode) batch")
LINE_ROLES: tuple[tuple[Role, re.Pattern[str]], ...] = (
    ("error", ERROR), ("warning", WARNING), ("info", STATS),
)  # fmt: skip
"""A line's role: the first that matches."""


class LogHighlighter(Highlighter):
    """Error, warning and SGLang stats lines in their roles' looks; search matches reversed."""

    def __init__(self, search: re.Pattern[str] | None = None) -> None:
        self.search = search

    def highlight(self, text: Text) -> None:
        """Style one line in place (only lines in view are ever styled)."""
        line = text.plain
        role: Role = next((role for role, found in LINE_ROLES if found.search(line)), "plain")
        text.stylize(SKIN[role])
        if self.search is not None:
            text.highlight_regex(self.search, style="reverse")


class LogScreen(Screen[None]):
    """One named log of one host."""

    KEYS = LOG_COMMANDS
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(KEYS)]

    def __init__(self, host: str, log_name: str) -> None:
        super().__init__()
        self.host = host
        self.log_name = log_name
        self.lines: collections.deque[str] = collections.deque(maxlen=MAX_LINES)
        self.following = True
        self.unseen = 0
        self.search: re.Pattern[str] | None = None
        self.filter: re.Pattern[str] | None = None
        self.match_index = -1
        self._prompt: str | None = None
        self._pending: collections.deque[str] = collections.deque(maxlen=MAX_LINES)
        self._status_due = False

    def compose(self) -> ComposeResult:
        """Status line, the log, a prompt for search and filter, footer."""
        yield Static(id="log-status")
        yield Log(id="log-view", max_lines=MAX_LINES, highlight=True)
        yield Input(id="log-prompt", classes="-hidden")
        yield KeyFooter()

    def on_mount(self) -> None:
        """Hear this log's chunks; show the status line; write new lines in batches."""
        signals_of(self).log_chunk_received.subscribe(self, self._chunk_received)
        self.query_one(Log).highlighter = LogHighlighter()
        self._update_status()
        self.set_interval(FLUSH_S, self._flush)

    def _chunk_received(self, received: LogChunkReceived) -> None:
        if (received.host, received.chunk.name) == (self.host, self.log_name):
            self.append_chunk(received.chunk)

    def append_chunk(self, chunk: LogChunk) -> None:
        """New lines from the agent (a reset starts over)."""
        if chunk.reset:
            self.lines.clear()
            self._redraw()
        text = chunk.text[:-1] if chunk.text.endswith("\n") else chunk.text
        new = [sanitise(line) for line in text.split("\n")]
        self.lines.extend(new)
        if self.following:
            self._pending.extend(new)
        else:
            self.unseen += len(new)
        self._status_due = True

    def _flush(self) -> None:
        """Write what arrived since the last flush, in one go."""
        if self._pending and self.following:
            if self.filter is not None:
                self._redraw()  # context lines around new matches need the lines before them
            else:
                self.query_one(Log).write_lines(list(self._pending), scroll_end=False)
            self._to_newest()
        self._pending.clear()
        if self._status_due:
            self._update_status()

    def shown_lines(self) -> list[str]:
        """The lines the view shows: all, or the filter's matches with CONTEXT lines around them."""
        if self.filter is None:
            return list(self.lines)
        lines = list(self.lines)
        keep = sorted({j for i, line in enumerate(lines) if self.filter.search(line)
                       for j in range(max(0, i - CONTEXT), min(len(lines), i + CONTEXT + 1))})  # fmt: skip
        shown: list[str] = []
        for previous, index in zip([None, *keep], keep, strict=False):
            if previous is not None and index != previous + 1:
                shown.append("--")
            shown.append(lines[index])
        return shown

    def action_toggle_follow(self) -> None:
        """Pause (new lines are counted, not shown) or follow again (and catch up)."""
        self.following = not self.following
        if self.following and self.filter is None and self.unseen:
            missed = list(self.lines)[-min(self.unseen, MAX_LINES) :]
            self.query_one(Log).write_lines(missed, scroll_end=False)  # only what came while paused
        elif self.following and self.unseen:
            self._redraw()
        if self.following:
            self.unseen = 0
            self._to_newest()
        self._update_status()

    def action_search(self) -> None:
        """Ask for a regex to highlight and jump between."""
        self._ask("search")

    def action_filter(self) -> None:
        """Ask for a regex: only matching lines are shown."""
        self._ask("filter")

    def action_next_match(self) -> None:
        """Jump to the next line matching the search."""
        self._jump(+1)

    def action_previous_match(self) -> None:
        """Jump to the previous line matching the search."""
        self._jump(-1)

    def action_copy_line(self) -> None:
        """Copy the current search match (or the last line) to the clipboard."""
        shown = self.shown_lines()
        if shown:
            line = shown[self.match_index] if 0 <= self.match_index < len(shown) else shown[-1]
            self.app.copy_to_clipboard(line)
            self.notify("line copied")

    def action_back(self) -> None:
        """Back to the dashboard (or close the prompt)."""
        prompt = self.query_one(Input)
        if not prompt.has_class("-hidden"):
            prompt.add_class("-hidden")
            return
        _ = self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Apply the search or filter typed in the prompt."""
        event.input.add_class("-hidden")
        try:
            pattern = re.compile(event.value, re.IGNORECASE) if event.value else None
        except re.error as exc:
            self.notify(f"not a regex: {exc}", severity="error")
            return
        if self._prompt == "search":
            self.search, self.match_index = pattern, -1
        else:
            self.filter = pattern
        self._redraw()
        self._update_status()  # the status line names the pattern in force at once
        if self._prompt == "search" and pattern is not None:
            self._jump(+1)

    def _ask(self, kind: str) -> None:
        self._prompt = kind
        prompt = self.query_one(Input)
        prompt.placeholder = f"{kind} (regex, empty to clear)"
        prompt.value = ""
        prompt.remove_class("-hidden")
        prompt.focus()

    def _jump(self, step: int) -> None:
        if self.search is None:
            return
        shown = self.shown_lines()
        hits = [i for i, line in enumerate(shown) if self.search.search(line)]
        if not hits:
            self.notify("no match")
            return
        later = [i for i in hits if (i - self.match_index) * step > 0]
        self.match_index = (
            (later[0] if step > 0 else later[-1]) if later else hits[0 if step > 0 else -1]
        )
        self.following = False
        self.query_one(Log).scroll_to(y=self.match_index, animate=False)
        self._update_status()

    def _redraw(self) -> None:
        view = self.query_one(Log)
        view.highlighter = LogHighlighter(self.search)
        view.clear()
        view.write_lines(self.shown_lines(), scroll_end=False)
        self._pending.clear()
        if self.following:
            self._to_newest()

    def _to_newest(self) -> None:
        """Following means the newest lines are on screen, wherever the view was scrolled.

        Textual's Log scrolls on a write only when the view already sits at its end: after a
        search jump, a redraw or a scroll it stayed on old lines while the status said following.
        """
        self.query_one(Log).scroll_end(animate=False, immediate=True, x_axis=False)

    def _update_status(self) -> None:
        """Host, log, state and lines; the patterns in force and the unseen lines after them.

        Each part whole: on lines of their own where one line cannot hold them all.
        """
        self._status_due = False
        state = "following" if self.following else "paused"
        parts = [Text.assemble(
            literal(self.host, "bold"),
            literal(f" · {self.log_name} · {state} · {len(self.lines):,} lines"),
        )]  # fmt: skip
        parts += [
            literal(f"{name}: /{pattern.pattern}/")
            for name, pattern in (("filter", self.filter), ("search", self.search))
            if pattern
        ]
        if self.unseen:
            parts.append(Text(f" +{self.unseen:,} new lines ", style="reverse"))
        status = self.query_one("#log-status", Static)
        width = status.content_size.width or self.app.size.width - 2
        rows = packed([part.cell_len for part in parts], width)
        status.update(Text("\n").join(Text(" " * GAP).join(parts[i] for i in row) for row in rows))

    def on_resize(self) -> None:
        """Pack the status line again for the new width."""
        self._update_status()
