"""Lines in SGLang's own log format: `[YYYY-mm-dd HH:MM:SS TP0] message`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO


class SglangLog:
    """Appends timestamped lines to a file (or stderr), flushed one by one like a real server's."""

    def __init__(self, path: Path | None) -> None:
        self._out: TextIO = path.open("a", buffering=1) if path else sys.stderr

    def line(self, message: str) -> None:
        """Write one log line."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._out.write(f"[{stamp} TP0] {message}\n")

    def close(self) -> None:
        """Close the file, unless it is stderr."""
        if self._out is not sys.stderr:
            self._out.close()
