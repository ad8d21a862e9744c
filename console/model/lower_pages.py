"""Which of the dashboard's lower panels fit beside the jobs, and the pages `]` shows the rest on.

Below NARROW_BELOW columns the GPU/training panel does not fit beside the jobs and the server
(and below TALL_FROM rows it gets a line or two under the server's); below DRAFTER_BESIDE_FROM
the drafter panel (60 columns of figures) does not fit either. A folded panel is not lost: `]`
cycles the lower half through pages, the jobs and what fits beside them first, then each folded
panel on the whole width. No Textual here.
"""

from __future__ import annotations

NARROW_BELOW = 110
DRAFTER_BESIDE_FROM = 170
TALL_FROM = 40

MAIN = "jobs"
GPUS = "gpus"
DRAFTER = "drafter"


def lower_pages(width: int, height: int, drafter_shown: bool) -> tuple[str, ...]:
    """The pages of the lower half of a `width` x `height` dashboard.

    MAIN, then each panel folded away or, below TALL_FROM rows, cut short under the server's.
    """
    folded = [GPUS] if width < NARROW_BELOW or height < TALL_FROM else []
    if drafter_shown and width < DRAFTER_BESIDE_FROM:
        folded.append(DRAFTER)
    return (MAIN, *folded)


def next_page(pages: tuple[str, ...], current: str) -> str:
    """The page after `current` (MAIN after the last, or when `current` is gone)."""
    if current not in pages:
        return MAIN
    return pages[(pages.index(current) + 1) % len(pages)]


def page_hint(pages: tuple[str, ...], current: str) -> str:
    """What `]` shows next, for the border of the panel on display ("" with one page)."""
    if len(pages) < 2:
        return ""
    if current == MAIN:
        return f"] {' · '.join(pages[1:])}"
    return f"] {next_page(pages, current)}"
