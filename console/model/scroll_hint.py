"""What a table says about the rows it has out of view: "+3 more ↓". No Textual here."""

from __future__ import annotations


def rows_out_of_view(total: int, first_in_view: int, in_view: int) -> str:
    """The rows above and below the view, in words; "" when every row is in view."""
    if in_view <= 0:
        return ""
    above = max(0, min(first_in_view, total))
    below = max(0, total - first_in_view - in_view)
    parts = [f"↑ {above} above"] if above else []
    parts += [f"+{below} more ↓"] if below else []
    return " · ".join(parts)
