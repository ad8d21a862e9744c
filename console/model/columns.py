"""Which columns of a table fit its width: the lower-priority ones fold away first. No Textual here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

CELL_PADDING = 2
"""A table cell's padding, one each side."""
STRETCH_MIN = 30
"""The least a column that takes the room left (the events' "what happened") is given."""


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
    """The columns to show, in table order.

    Those in `fold_order` fold away first to last until the rest fit; then the folded ones that
    still fit in the room left come back, the last to fold first (a narrow rate is not lost to a
    wide overrun that folded after it). A width of 0 (not laid out yet) shows every column.
    """
    if available <= 0:
        return list(widths)
    folded: list[str] = []
    for name in fold_order:
        if _width(widths, [c for c in widths if c not in folded]) <= available:
            break
        folded.append(name)
    for name in reversed(folded):
        kept = [c for c in widths if c not in folded or c == name]
        if _width(widths, kept) <= available:
            folded.remove(name)
    return [c for c in widths if c not in folded]


def _width(widths: Mapping[str, int], columns: Sequence[str]) -> int:
    return sum(widths[c] + CELL_PADDING for c in columns)


def stretched_width(
    widths: Mapping[str, int], shown: Sequence[str], stretch: str, available: int
) -> int:
    """The width of column `stretch` when it takes the room the other `shown` columns leave.

    Never below its own text's width or STRETCH_MIN, whichever is less: a table too narrow for
    that scrolls sideways rather than showing nothing of the column that matters.
    """
    others = _width(widths, [c for c in shown if c != stretch])
    return max(available - others - CELL_PADDING, min(widths[stretch], STRETCH_MIN))


def with_stretch_min(widths: Mapping[str, int], stretch: str) -> dict[str, int]:
    """`widths` with column `stretch` counted at no more than STRETCH_MIN, for folding.

    A long text there is cut, not a reason to fold every other column away.
    """
    return {**widths, stretch: min(widths[stretch], STRETCH_MIN)}
