"""The Rich consoles the headless commands print through.

On a terminal, output fits the terminal. Piped or redirected, a line is never wrapped or cut:
a script or a log keeps every path and digest whole (Rich would otherwise assume 80 columns,
or $COLUMNS, and shorten table cells with an ellipsis).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rich.console import Console

from agent.protocol import OperationInfo
from console.link.redeploy import step_lines
from console.model.safe_text import literal

UNBOUNDED_WIDTH = 100_000
"""Wide enough for any path: a table is only as wide as its cells need, so nothing is padded."""


def stdout_console() -> Console:
    """Standard output for a command's results."""
    return _console(stderr=False)


def stderr_console() -> Console:
    """Standard error for its one-line failures."""
    return _console(stderr=True)


def _console(*, stderr: bool) -> Console:
    width = None if Console(stderr=stderr).is_terminal else UNBOUNDED_WIDTH
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=width)


def step_printer(out: Console) -> Callable[[OperationInfo], None]:
    """Prints what changed in an operation the agent carries since the last report."""
    last: list[OperationInfo | None] = [None]

    def report(info: OperationInfo) -> None:
        for line in step_lines(last[0], info):
            out.print(literal(line))
        last[0] = info

    return report


def say(out: Console, as_json: bool, text: str, wire: object) -> None:
    """`wire` as one JSON line for scripts, else `text` for people (never markup)."""
    if as_json:
        out.file.write(json.dumps(wire) + "\n")
    else:
        out.print(literal(text))
