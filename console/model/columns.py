"""Which columns of a table fit its width: the lower-priority ones fold away first. No Textual here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

CELL_PADDING = 2
"""A table cell's padding, one each side."""


def content_widths(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> dict[str, int]:
    """Each column's widest text, its header included."""
    widths = {header: len(header) for header in headers}
    for row in rows:
        for header, cell in zip(headers, row, strict=True):
            widths[header] = max(widths[header], len(cell))
    return widths


def columns_that_fit(
    widths: Mapping[str, int], available: int, fold_order: Sequence[str]
) -> list[str]:
    """The columns to show, in table order: those in `fold_order` go first to last until they fit.

    A width of 0 (not laid out yet) shows every column.
    """
    shown = list(widths)
    for name in fold_order:
        if available <= 0 or sum(widths[c] + CELL_PADDING for c in shown) <= available:
            break
        shown.remove(name)
    return shown
