"""The console's log file: one rotating file for the TUI's failures and dependencies' warnings.

A traceback printed to the terminal under a running TUI is lost, and a dependency's warning on a
user's screen is noise, so both go here: the app's warnings and errors (`attach_log_file`) and
every Python warning from the moment the command starts (`console.cli.launch`). Both write
through the one handler this module keeps for the file: two handlers rotating one file each
renamed it under the other, which then wrote on into the old copy. The file is rotated small (a
few hundred KiB in all) and sanitised like every other place host text can reach, since a reason
may quote the host. Light to import: Rich comes at the first line formatted, so the launch can
set this up before any dependency is imported.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

MAX_BYTES = 256 * 1024
BACKUPS = 2
LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONSOLE_LOGGER = logging.getLogger("console")

_handlers: dict[Path, logging.Handler] = {}


class SanitisingFormatter(logging.Formatter):
    """Log lines quote the agent and its dependencies: sanitised like all host text."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as usual, every control character made visible."""
        # imported here, not above: it brings Rich, which must come after warnings are routed
        from console.model.safe_text import sanitise_lines

        return sanitise_lines(super().format(record))


class _LogFile(RotatingFileHandler):
    """Opened, and its folder made, at the first line; a line it cannot write is dropped unseen."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
        )
        self.setLevel(logging.WARNING)
        self.setFormatter(SanitisingFormatter(LINE_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        """A log that cannot be written is no reason to write on the user's terminal."""


def log_file_handler(path: Path) -> logging.Handler:
    """The one handler writing the log file at `path` (made at the first call)."""
    key = path.absolute()
    if key not in _handlers:
        _handlers[key] = _LogFile(key)
    return _handlers[key]


def attach_log_file(path: Path) -> logging.Handler:
    """Send the console's warnings and errors, tracebacks included, to the file at `path`."""
    handler = log_file_handler(path)
    CONSOLE_LOGGER.addHandler(handler)
    return handler


def detach_log_file(handler: logging.Handler) -> None:
    """Stop sending the console's lines there (the app is closing; warnings still go there)."""
    CONSOLE_LOGGER.removeHandler(handler)
    handler.flush()
