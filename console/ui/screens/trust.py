"""Pinning a host key on purpose: the fingerprint, where it goes, and a typed "yes".

A changed key gets no such choice: the modal explains and only closes.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from console.link.host_keys import OfferedKey
from console.model.safe_text import literal, literal_lines


class TrustScreen(ModalScreen[bool]):
    """Returns True only when the user typed yes for an unknown (not a changed) key."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, host: str, detail: str, offered: OfferedKey | None) -> None:
        super().__init__()
        self.host = host
        self.detail = detail
        self.offered = offered

    def compose(self) -> ComposeResult:
        """The facts, then the prompt (none for a changed key)."""
        can_pin = self.offered is not None and not self.offered.changed
        with Vertical(id="trust-box"):
            yield Static(literal(f"{self.host}: host key not trusted", "bold"), id="trust-title")
            yield Static(literal_lines(self.detail), id="trust-text")
            if can_pin:
                yield Static(
                    "Compare the fingerprint with `ssh-keygen -lf` on the box. Type yes to pin it:"
                )
                yield Input(id="trust-answer", placeholder="yes")
            else:
                yield Static("This cannot be pinned from here. Press escape.", id="trust-refused")

    def on_mount(self) -> None:
        """Focus the prompt when there is one."""
        for prompt in self.query(Input):
            prompt.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Pin only on exactly "yes"."""
        _ = self.dismiss(event.value.strip() == "yes")

    def action_cancel(self) -> None:
        """Escape never pins."""
        _ = self.dismiss(False)
