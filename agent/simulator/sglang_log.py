"""Lines in SGLang's own log format: `[YYYY-mm-dd HH:MM:SS] message`, `[... DP1] ...` per DP rank.

The prefix carries ` DPn` only when data parallelism is on and ` TPn` only when tp_size > 1
(srt/managers/scheduler.py:6279-6290; format srt/utils/common.py:2618-2637). The simulator runs
one TP rank, so its lines have no TP part.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import TextIO


class SglangLog:
    """Appends timestamped lines to a file (or stderr), flushed one by one like a real server's."""

    def __init__(self, path: Path | None) -> None:
        self._out: TextIO = path.open("a", buffering=1) if path else sys.stderr

    def line(self, message: str, tag: str = "") -> None:
        """Write one log line; `tag` is the rank part of the prefix, such as " DP1"."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._out.write(f"[{stamp}{tag}] {message}\n")

    def close(self) -> None:
        """Close the file, unless it is stderr."""
        if self._out is not sys.stderr:
            self._out.close()


class BadRequestLines(logging.Filter):
    """aiohttp's traceback for an unparseable request, as uvicorn's one warning line.

    sglang-router probes each worker for gRPC (an HTTP/2 preface) before HTTP; uvicorn answers
    that with `WARNING:  Invalid HTTP request received.` in the server log, not a traceback on
    stderr. Other errors pass through untouched.
    """

    def __init__(self, log: SglangLog) -> None:
        super().__init__()
        self._log = log

    def filter(self, record: logging.LogRecord) -> bool:
        """False (dropped) for a bad request, logged as one line; True for anything else."""
        from aiohttp.http_exceptions import BadHttpMessage

        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, BadHttpMessage):
            self._log.line("WARNING:  Invalid HTTP request received.")
            return False
        return True


def quiet_bad_requests(log: SglangLog) -> None:
    """Send aiohttp's bad-request errors to the SGLang log as uvicorn's line, not to stderr."""
    logging.getLogger("aiohttp.server").addFilter(BadRequestLines(log))
