"""How the headless commands' log lines are written: sanitised like all host text.

Light to import (it brings Rich only at the first line formatted), so the launch can set it up
before any dependency is imported.
"""

from __future__ import annotations

import logging


class SanitisingFormatter(logging.Formatter):
    """Log lines quote the agent and its dependencies: sanitised like all host text."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as usual, every control character made visible."""
        # imported here, not above: it brings Rich, which must come after warnings are routed
        from console.model.safe_text import sanitise_lines

        return sanitise_lines(super().format(record))
