"""Where the `eagle-console` command starts: a dependency's warnings go to the log, not the screen.

A Python warning from a dependency is noise on a user's terminal and breaks "every failure is one
line": cryptography 51 opened every command, and the demo's first screen, with five multi-line
DSA deprecations raised as asyncssh was imported. So before anything imports asyncssh, Rich,
Textual or torch, warnings are captured into the console's own log, through the one handler the
TUI's failures are written with (console/ui/log_file.py). Our own code's warnings still fail the
tests: pytest sets its filters.

Ctrl+C while those imports run (the first half second of `make demo`) ends the command with exit
130 and no traceback, as it does once the command runs.
"""

from __future__ import annotations

import logging
from pathlib import Path

WARNINGS_LOGGER = "py.warnings"  # where logging.captureWarnings sends each warning
EXIT_INTERRUPTED = 130


def main() -> int:
    """The entry point: route warnings to the log, then run the command."""
    try:
        from console.config import console_log_path

        send_warnings_to_log(console_log_path())
        from console.cli.main import main as run_command

        return run_command()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def send_warnings_to_log(path: Path) -> logging.Handler:
    """Capture every Python warning shown from now on into the log file at `path`."""
    from console.ui.log_file import log_file_handler

    handler = log_file_handler(path)
    logger = logging.getLogger(WARNINGS_LOGGER)
    if handler not in logger.handlers:
        logger.addHandler(handler)
    logger.propagate = False  # never on to logging.lastResort, which writes to stderr
    logging.captureWarnings(True)  # Python's filters (and -W, PYTHONWARNINGS) still choose which
    return handler
