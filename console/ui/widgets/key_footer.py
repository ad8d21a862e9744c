"""The footer of a screen's keys, fitted to the terminal's width.

Textual's Footer cuts whatever does not fit, so at 80 columns the dashboard lost `?` and `q`.
This one draws compact when the full words do not fit, then short words, then only the keys that
have a short word (console/model/footer_fit.py); `?` still lists every key in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.model.footer_fit import FooterEntry, FooterStyle, footer_style, is_shown, words
from console.ui.commands import keys_of


class KeyFooter(Footer):
    """A footer whose keys fit its width: compact, then short words, as the width asks."""

    _entries: Sequence[FooterEntry] = ()
    _drawn: FooterStyle | None = None
    """The style the keys were last drawn in."""

    def __init__(self) -> None:
        super().__init__(show_command_palette=False)  # the command table decides the footer

    def compose(self) -> ComposeResult:
        """Textual's footer keys, restyled and folded to fit."""
        shorts = {command.action: command.short for command in keys_of(self.screen)}
        keys = [key for key in super().compose() if isinstance(key, FooterKey)]
        self._entries = [
            FooterEntry(key.key_display, key.description, shorts.get(key.action, ""))
            for key in keys
        ]
        style = footer_style(self._entries, self.size.width or self.app.size.width)
        self._drawn, self.compact = style, style.compact
        for key, entry in zip(keys, self._entries, strict=True):
            if is_shown(entry, style):
                key.description = words(entry, style)
                yield key

    def on_resize(self, event: events.Resize) -> None:
        """Draw the keys again when the new width asks for another style."""
        if self._drawn and footer_style(self._entries, event.size.width) != self._drawn:
            self.refresh(recompose=True)
