"""The footer of a screen's keys, fitted to the terminal's width.

Textual's Footer cuts whatever does not fit, so at 80 columns the dashboard lost `?` and `q`.
This one draws every key in full when they fit, else the keys that matter most (each command's
rank in console/ui/commands.py) in short words (console/model/footer_fit.py); `?` still lists
every key in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.model.footer_fit import FooterEntry, FooterFit, fit_footer
from console.ui.commands import DEFAULT_RANK, Command, keys_of


class KeyFooter(Footer):
    """A footer whose keys fit its width: compact, short words, then the most used keys only."""

    _entries: Sequence[FooterEntry] = ()
    _drawn: FooterFit | None = None
    """What the keys were last drawn as."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False)  # the command table decides the footer

    def compose(self) -> ComposeResult:
        """Textual's footer keys, restyled and left out to fit."""
        commands = {command.action: command for command in keys_of(self.screen)}
        keys = [key for key in super().compose() if isinstance(key, FooterKey)]
        self._entries = [_entry(key, commands.get(key.action)) for key in keys]
        fit = fit_footer(self._entries, self.size.width or self.app.size.width)
        self._drawn, self.compact = fit, fit.compact
        for key, word in zip(keys, fit.words, strict=True):
            if word is not None:
                key.description = word
                yield key

    def on_resize(self, event: events.Resize) -> None:
        """Draw the keys again when the new width fits them otherwise."""
        if self._drawn and fit_footer(self._entries, event.size.width) != self._drawn:
            self.refresh(recompose=True)


def _entry(key: FooterKey, command: Command | None) -> FooterEntry:
    """The footer's view of `key`; a key the command table lacks gets no short word."""
    if command is None:
        return FooterEntry(key.key_display, key.description, rank=DEFAULT_RANK)
    return FooterEntry(key.key_display, key.description, command.short, command.rank)
