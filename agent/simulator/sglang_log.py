"""Lines in SGLang's own log format: `[YYYY-mm-dd HH:MM:SS] message`, `[... DP1] ...` per DP rank.

The prefix carries ` DPn` only when data parallelism is on and ` TPn` only when tp_size > 1
(srt/managers/scheduler.py:6279-6290; format srt/utils/common.py:2618-2637). The simulator runs
one TP rank, so its lines have no TP part.
"""

from __future__ import annotations

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
