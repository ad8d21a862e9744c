"""A status line's parts packed onto as few lines as a width allows, none split. No Textual here.

The log view's status names the search and filter patterns in force; cut at the terminal's edge
(or wrapped in the middle of "search: /…/") a pattern could not be read back.
"""

from __future__ import annotations

from collections.abc import Sequence

GAP = 2
"""Cells between two parts on one line."""


def packed(widths: Sequence[int], width: int) -> list[list[int]]:
    """The indexes of the parts of `widths` on each line, in order.

    A part goes on the line before it when it fits there, else starts a line (a part wider than
    `width` wraps on a line of its own).
    """
    lines: list[list[int]] = []
    used = 0
    for index, part in enumerate(widths):
        if lines and used + GAP + part <= width:
            lines[-1].append(index)
            used += GAP + part
        else:
            lines.append([index])
            used = part
    return lines
