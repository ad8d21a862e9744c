"""How a footer of keys fits its width: in full words, short words, or only the keys that matter.

Every key in full words when they fit, else in short words, else the keys that matter most; the
room left goes to full words again.

No Textual here. The widths follow Textual's Footer: a key and its description take three cells of
padding besides their text; the compact style takes two (one between them, one after).

A key's rank says when it leaves a narrow footer: the highest rank first, and among equals the
later key. So a footer never drops `?` for `X`, and a key a wider footer lacks is never in a
narrower one. Help (`?`) lists every key, whatever the footer shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROOMY_PADDING = 3
COMPACT_PADDING = 2


@dataclass(frozen=True, slots=True)
class FooterEntry:
    """A key as the footer shows it, its full description, its short word, and its rank."""

    key: str
    description: str
    short: str = ""
    """Its word in a tight footer; empty: the description is short enough."""
    rank: int = 0
    """The order keys leave a footer too narrow for all of them: the highest rank first."""


@dataclass(frozen=True, slots=True)
class FooterFit:
    """What the footer draws: compact or not, and each entry's word (None: left out)."""

    compact: bool
    words: tuple[str | None, ...]


def footer_width(words: Sequence[tuple[str, str | None]], compact: bool) -> int:
    """The cells that (key, word) pairs take; a pair whose word is None is left out."""
    padding = COMPACT_PADDING if compact else ROOMY_PADDING
    return sum(len(key) + len(word) + padding for key, word in words if word is not None)


def fit_footer(entries: Sequence[FooterEntry], width: int) -> FooterFit:
    """What the footer draws for `entries` at `width`.

    Roomy if every key fits it, in full words or else short ones; else compact, in the same
    order; else compact with the keys of lowest rank that fit in short words. The room left then
    goes to full words again, the keys of lowest rank first.
    """
    full = tuple(entry.description for entry in entries)
    for compact in (False, True):
        if _width(entries, full, compact) <= width:
            return FooterFit(compact, full)
        words = _kept(entries, width, compact)
        if compact or None not in words:
            return FooterFit(compact, _spent(entries, words, width, compact))
    raise AssertionError("unreachable: a compact footer always fits")


def _kept(entries: Sequence[FooterEntry], width: int, compact: bool) -> list[str | None]:
    """Short words for the keys of lowest rank that fit `width`; None for the others."""
    words: list[str | None] = [None] * len(entries)
    for index in _by_rank(entries):
        words[index] = _short(entries[index])
        if _width(entries, words, compact) > width:
            words[index] = None
            break
    return words


def _spent(
    entries: Sequence[FooterEntry], words: list[str | None], width: int, compact: bool
) -> tuple[str | None, ...]:
    """`words` with full descriptions instead of short words while they fit, lowest rank first."""
    for index in _by_rank(entries):
        shorter = words[index]
        if shorter is None:
            continue
        words[index] = entries[index].description
        if _width(entries, words, compact) > width:
            words[index] = shorter
    return tuple(words)


def _short(entry: FooterEntry) -> str:
    return entry.short or entry.description


def _by_rank(entries: Sequence[FooterEntry]) -> list[int]:
    """Indexes of `entries`, the first to keep first."""
    return sorted(range(len(entries)), key=lambda index: (entries[index].rank, index))


def _width(entries: Sequence[FooterEntry], words: Sequence[str | None], compact: bool) -> int:
    return footer_width([(e.key, w) for e, w in zip(entries, words, strict=True)], compact)
