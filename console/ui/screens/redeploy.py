"""`R`: kill, deploy and restart a job, after a modal that says exactly what will happen.

Cancel has the focus. The numbers (responses, tokens, the projection, the budget advice) follow
the host's snapshots while the modal is open: it subscribes to `host_shown` as the dashboard
does. The command that will be started again is editable (to add `--token-budget 10000000`,
say) and wraps, so its tail is never cut off; a suggested command not edited yet follows the
advice. `ctrl+d` shows the diff of the files that will be deployed. A command holding characters
that cannot be shown as they are (escapes, controls) is shown with placeholders and cannot be
edited: it restarts exactly as it was. At 80x24 the title, the pid line, the whole command and
the buttons stay on screen; the rest of the text scrolls. The text and the command may grow as
the numbers move but never shrink, so the buttons do not jump away from a pointer aimed at them.
"""

from __future__ import annotations

import shlex

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from console.model.redeploy_view import RedeployFacts
from console.model.safe_text import literal, literal_lines, sanitise
from console.ui.intents import PendingDiffRequested
from console.ui.signals import HostShown, signals_of

EDIT_LABEL = "Command to start again (edit it to change this run only):"
FIXED_LABEL = (
    "Command to start again (it holds control characters, shown as symbols: it restarts "
    "exactly as it was and cannot be edited here):"
)


class CommandField(TextArea):
    """The command, wrapped over as many lines as it takes; `enter` adds no line to it."""

    def on_key(self, event: events.Key) -> None:
        """A command is one line: `enter` does nothing here (as in a one-line field)."""
        if event.key == "enter":
            event.prevent_default()


class RedeployScreen(ModalScreen[tuple[str, ...] | None]):
    """Returns the argv to start (the same or edited), or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+d", "diff", "Diff of the files"),
    ]

    def __init__(self, facts: RedeployFacts) -> None:
        super().__init__()
        self.facts = facts
        self.suggested = self._suggestion()
        """The command offered: the job's own, or with the advice's `--token-budget`."""

    def _suggestion(self) -> tuple[str, ...]:
        advice = self.facts.advice()
        return advice.argv if advice is not None else self.facts.job.argv

    @property
    def editable(self) -> bool:
        """True when the command shows as it is, so what is edited is what will run."""
        command = shlex.join(self.suggested)
        return sanitise(command) == command

    def compose(self) -> ComposeResult:
        """Title, what will happen (scrolls), the command, Cancel and Redeploy."""
        with Vertical(id="redeploy-box"):
            yield Static(literal(self.facts.title, "bold"), id="redeploy-title")
            with VerticalScroll(id="redeploy-facts"):
                yield Static(literal_lines(self.facts.text()), id="confirm-text")
            yield Static(EDIT_LABEL if self.editable else FIXED_LABEL, id="redeploy-label")
            yield CommandField(
                _shown(self.suggested), id="redeploy-argv", soft_wrap=True,
                show_line_numbers=False, tab_behavior="focus", disabled=not self.editable,
            )  # fmt: skip
            with Horizontal(id="redeploy-buttons"):
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button("Kill, deploy, restart", id="confirm", variant="error")

    def on_mount(self) -> None:
        """Cancel has the focus; the numbers follow the host from now on."""
        self.query_one("#cancel", Button).focus()
        signals_of(self).host_shown.subscribe(self, self._host_shown)
        command = self.query_one(TextArea)
        self.call_after_refresh(command.scroll_end, animate=False)  # a long one shows its tail
        self.call_after_refresh(self._hold_heights)

    def _host_shown(self, shown: HostShown) -> None:
        """Take the numbers of a new snapshot of this modal's host."""
        snapshot = shown.view.snapshot
        if shown.view.name != self.facts.host or snapshot is None:
            return
        if snapshot is self.facts.snapshot:
            return
        self.facts = self.facts.seen(snapshot)
        self.query_one("#confirm-text", Static).update(literal_lines(self.facts.text()))
        suggested, command = self._suggestion(), self.query_one(TextArea)
        if suggested != self.suggested and command.text == _shown(self.suggested):
            command.text = _shown(suggested)  # not edited: it follows the advice
        self.suggested = suggested
        self.call_after_refresh(self._hold_heights)

    def _hold_heights(self) -> None:
        """The text and the command keep the tallest height they have had (within their caps).

        A snapshot that shortens the text (an advice line gone, a number one digit shorter)
        would shrink the centred box and move its buttons under a pointer on its way to one.
        Textual runs it after the next refresh of whichever screen is on top: once the modal is
        dismissed, its widgets may be gone, and there is nothing left to hold.
        """
        if not self.is_current:
            return
        for widget in (self.query_one("#redeploy-facts"), self.query_one(TextArea)):
            held = widget.styles.min_height
            shown = widget.outer_size.height
            if held is None or held.value < shown:
                widget.styles.min_height = shown

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the argv to start, or None."""
        if event.button.id != "confirm":
            _ = self.dismiss(None)
            return
        text = self.query_one(TextArea).text
        if not self.editable or text == _shown(self.suggested):
            _ = self.dismiss(self.suggested)
            return
        try:
            argv = tuple(shlex.split(text))
        except ValueError as exc:
            self.notify(f"the command does not parse: {exc}", severity="error")
            return
        _ = self.dismiss(argv or None)

    def action_cancel(self) -> None:
        """Escape cancels."""
        _ = self.dismiss(None)

    def action_diff(self) -> None:
        """Ask for the diff of what will be deployed."""
        self.post_message(PendingDiffRequested())


def _shown(argv: tuple[str, ...]) -> str:
    """The command as the field shows it: shell words, control characters as symbols."""
    return sanitise(shlex.join(argv))
