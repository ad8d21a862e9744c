"""Where the `eagle-console` command starts: a dependency's warnings go to the log, not the screen.

A Python warning from a dependency is noise on a user's terminal and breaks "every failure is one
line": cryptography 51 opened every command, and the demo's first screen, with five multi-line
DSA deprecations raised as asyncssh was imported. So before anything imports asyncssh, Rich,
Textual or torch, warnings are captured into the console's own log (sanitised, rotated small, as
the TUI's failures are). Our own code's warnings still fail the tests: pytest sets its filters.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from console.cli.log_format import SanitisingFormatter
from console.config import console_log_path

MAX_BYTES = 256 * 1024
BACKUPS = 2
WARNINGS_LOGGER = "py.warnings"  # where logging.captureWarnings sends each warning


def main() -> int:
    """The entry point: route warnings to the log, then run the command."""
    send_warnings_to_log(console_log_path())
    from console.cli.main import main as run_command

    return run_command()


def send_warnings_to_log(path: Path) -> logging.Handler:
    """Capture every Python warning shown from now on into the log file at `path`."""
    handler = _WarningsFile(path)
    handler.setFormatter(SanitisingFormatter("%(asctime)s WARNING %(name)s: %(message)s"))
    logger = logging.getLogger(WARNINGS_LOGGER)
    logger.addHandler(handler)
    logger.propagate = False  # never on to logging.lastResort, which writes to stderr
    logging.captureWarnings(True)  # Python's filters (and -W, PYTHONWARNINGS) still choose which
    return handler


class _WarningsFile(RotatingFileHandler):
    """Opened, and its folder made, at the first warning; one it cannot write is dropped unseen."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
        )

    def emit(self, record: logging.LogRecord) -> None:
        try:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        """A log that cannot be written is no reason to write on the user's terminal."""
