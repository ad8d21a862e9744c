"""The console's log file: where a failure's traceback goes while the TUI owns the terminal.

A traceback printed to the terminal under a running TUI is lost, so the app writes its failures
here instead. The file is rotated small (a few hundred KiB in all) and sanitised like every
other place host text can reach, since a reason may quote the host.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from console.model.safe_text import sanitise_lines

MAX_BYTES = 256 * 1024
BACKUPS = 2
CONSOLE_LOGGER = logging.getLogger("console")


class _SanitisingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return sanitise_lines(super().format(record))


def attach_log_file(path: Path) -> logging.Handler:
    """Send the console's warnings and errors, tracebacks included, to the file at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_SanitisingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    CONSOLE_LOGGER.addHandler(handler)
    return handler


def detach_log_file(handler: logging.Handler) -> None:
    """Stop writing to the file (the app is closing)."""
    CONSOLE_LOGGER.removeHandler(handler)
    handler.close()
