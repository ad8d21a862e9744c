"""Why a torchrun job failed: which rank, how, and the worker's own last words.

torchrun ends a failed run with its ChildFailedError summary (torch/distributed/elastic/
multiprocessing/errors/error_handler.py and errors/__init__.py's `ChildFailedError.format_msg`):
a "Root Cause (first observed failure):" block of `rank : 1 (local_rank: 0)`, `exitcode : 3
(pid: …)` and `traceback : …` fields. Its last line points at the docs, the same for every
failure; the worker's last line before torchrun's `failed (exitcode: 3) local_rank: 0` line says
what went wrong.
"""

from __future__ import annotations

import re

ROOT_CAUSE = "Root Cause (first observed failure):"
_FIELD = re.compile(r"^\s*(rank|exitcode|traceback)\s*:\s*(.*?)\s*$")
_LAUNCHER_SAYS_FAILED = re.compile(r"\] failed \(exitcode: -?\d+\) local_rank: \d+")
_NO_TRACEBACK = "To enable traceback see"
_LAUNCHER_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")
"""torch's own log lines (glog's form: level, month and day, time), which are not the worker's."""


def torchrun_reason(lines: list[str]) -> str | None:
    """`rank 1 (local_rank: 0) exitcode 3: <the worker's last line>`, or None if not torchrun's."""
    if ROOT_CAUSE not in lines:
        return None
    block = lines[lines.index(ROOT_CAUSE) + 1 :]
    fields: dict[str, str] = {}
    for index, line in enumerate(block):
        found = _FIELD.match(line)
        if found is not None and found[1] not in fields:
            fields[found[1]] = found[2]
            if found[1] == "traceback" and found[2].startswith("Traceback"):
                fields[found[1]] = _last_of_traceback(block[index + 1 :]) or found[2]
    rank = fields.get("rank", "?")
    code = fields.get("exitcode", "?").split(" (pid", 1)[0]
    said = fields.get("traceback", "")
    if not said or said.startswith(_NO_TRACEBACK):
        said = _worker_last_line(lines)
    return f"torchrun: rank {rank} exitcode {code}" + (f": {said}" if said else "")


def _last_of_traceback(rest: list[str]) -> str:
    """A @record worker's traceback in the summary: its last line, the error itself."""
    said = ""
    for line in rest:
        if line.startswith("=") or _FIELD.match(line) is not None:
            break
        said = line.strip() or said
    return said


def _worker_last_line(lines: list[str]) -> str:
    """The last line that says something before torchrun's first `failed (exitcode…)` line."""
    end = next((i for i, line in enumerate(lines) if _LAUNCHER_SAYS_FAILED.search(line)), None)
    for line in reversed(lines[:end] if end is not None else []):
        text = line.strip()
        if any(c.isalnum() for c in text) and _LAUNCHER_LOG.match(text) is None:
            return text
    return ""
