"""How a footer of keys fits its width: full words, tighter, short words, then only the main keys.

No Textual here. The widths follow Textual's Footer: a key and its description take three cells of
padding besides their text; the compact style takes two (one between them, one after).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FooterEntry:
    """A key as the footer shows it, its full description, and its word for a narrow footer."""

    key: str
    description: str
    short: str = ""
    """Empty: the key folds out of a narrow footer (help still lists it)."""


@dataclass(frozen=True, slots=True)
class FooterStyle:
    """How the footer draws its keys."""

    compact: bool
    short: bool
    """Short words for the keys that have one."""
    fold: bool = False
    """Only the keys that have a short word."""


STYLES = (
    FooterStyle(compact=False, short=False),
    FooterStyle(compact=True, short=False),
    FooterStyle(compact=True, short=True),
    FooterStyle(compact=True, short=True, fold=True),
)
"""From the roomiest to the tightest."""


def is_shown(entry: FooterEntry, style: FooterStyle) -> bool:
    """Whether the footer shows `entry` in `style`."""
    return bool(entry.short) or not style.fold


def words(entry: FooterEntry, style: FooterStyle) -> str:
    """The description the footer shows for `entry` in `style`."""
    return entry.short if style.short and entry.short else entry.description


def footer_width(entries: Sequence[FooterEntry], style: FooterStyle) -> int:
    """The cells the footer's keys take in `style`."""
    padding = 2 if style.compact else 3
    shown = [e for e in entries if is_shown(e, style)]
    return sum(len(e.key) + len(words(e, style)) + padding for e in shown)


def footer_style(entries: Sequence[FooterEntry], width: int) -> FooterStyle:
    """The roomiest style whose keys fit `width`; the tightest when none does."""
    for style in STYLES:
        if footer_width(entries, style) <= width:
            return style
    return STYLES[-1]
