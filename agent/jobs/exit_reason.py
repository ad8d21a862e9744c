"""Why a job failed, in its own words: the last line it wrote, made safe to carry and to show.

The runner's reason for exiting 2 ("the server refused the key in ...") was its last line, and
stayed in its log while the dashboard said only "exited with code 2". The shim reads it
as the job's main process ends with a code other than 0 and records it in exit.json beside the
code. What leaves here is one line of printable text, no longer than MAX_EXIT_REASON_CHARS:
never a terminal escape, whoever wrote the log (and whoever wrote exit.json: `bounded_reason`
checks it again where it is read).
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.host.regular_files import open_regular
from agent.jobs.torchrun_reason import ROOT_CAUSE, torchrun_reason
from agent.logs import TAIL_BYTES, NamedLog, read_chunk, reason_text

TAIL_LINES = 8
"""The last lines looked at for one that says something (blank and bare-punctuation ones do not)."""
LAUNCHER_TAIL_BYTES = 4 * TAIL_BYTES
"""Enough for torchrun's failure summary and the traceback it prints above it."""


def exit_reason(log: Path) -> str | None:
    """The last line of `log` that says something, as a reason; None when it has none."""
    try:
        chunk = read_chunk(NamedLog("exit", log), -TAIL_BYTES, None)
        if ROOT_CAUSE in chunk.text:  # torchrun's summary: the worker's words are further up
            launcher = read_chunk(NamedLog("exit", log), -LAUNCHER_TAIL_BYTES, None)
            if (reason := torchrun_reason(launcher.text.splitlines())) is not None:
                return reason_text(reason)
        lines = chunk.text.splitlines()[-TAIL_LINES:] or [_unaligned_tail(log)]
    except OSError:
        return None
    for line in reversed(lines):
        reason = reason_text(line)
        if any(c.isalnum() for c in reason):
            return reason
    return None


def _unaligned_tail(log: Path) -> str:
    """The end of a last line longer than TAIL_BYTES, "…" before it.

    A tail aligned to a line start holds nothing then, and such a job's reason was empty.
    """
    with open_regular(log) as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - TAIL_BYTES))
        text = handle.read(TAIL_BYTES).decode(errors="replace")
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    return ("…" if size > TAIL_BYTES else "") + last
