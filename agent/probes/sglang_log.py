"""SGLang's scheduler stats lines, parsed as `key: value` pairs whatever their order or version.

`[2026-11-29 10:00:00 TP0] Decode batch, #running-req: 12, #token: 34567, token usage: 0.21,
accept len: 2.85, cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0`, the older
`Decode batch.` form, `[N]` after batch, and `Prefill batch` lines all parse; fields that are
missing are simply absent.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent.regular_files import open_regular

_STAT_LINE = re.compile(
    r"^\[(?P<stamp>[^\]]*)\]\s+(?P<kind>Prefill|Decode) batch(?:\s*\[\d+\])?[.,]?\s*(?P<rest>.*)$"
)
TAIL_BYTES = 64 * 1024


def parse_stat_line(line: str) -> dict[str, float | bool | str] | None:
    """The fields of one stats line (plus `kind` and `stamp`), or None if it is not one."""
    match = _STAT_LINE.match(line.strip())
    if match is None:
        return None
    fields: dict[str, float | bool | str] = {"kind": match["kind"].lower(), "stamp": match["stamp"]}
    for part in match["rest"].split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            fields[key.strip()] = _value(value.strip())
    return fields


def _value(text: str) -> float | bool | str:
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


def latest_decode_stats(path: Path) -> dict[str, float | bool | str] | None:
    """The last Decode batch line in the end of the log, parsed."""
    try:
        with open_regular(path) as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES).decode(errors="replace")
    except OSError:  # missing, unreadable, or a FIFO or a device: no stats
        return None
    for line in reversed(tail.splitlines()):
        fields = parse_stat_line(line)
        if fields is not None and fields["kind"] == "decode":
            return fields
    return None
