"""SGLang's scheduler stats lines, parsed as `key: value` pairs whatever their order or version.

`[2026-11-29 10:00:00 TP0] Decode batch, #running-req: 12, #token: 34567, token usage: 0.21,
accept len: 2.85, cuda graph: True, gen throughput (token/s): 1234.56, #queue-req: 0`, the older
`Decode batch.` form, `[N]` after batch, and `Prefill batch` lines all parse; fields that are
missing are simply absent.

With data parallelism each DP rank logs its own line, tagged `DPn` in the prefix
(srt/managers/scheduler.py:6279-6281): the latest line of every rank still logging is summed
(averaged for ratios), as the metrics are. Hybrid SWA/SSM models log `full token usage` and
`swa token usage` (or `mamba usage`) instead of `token usage`
(managers/scheduler_components/pool_stats_observer.py:118-150); `token usage` is then their
maximum, as SGLang's own token_usage gauge is (pool_stats_observer.py:95-102, 152-156).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent.host.regular_files import open_regular

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
    """The last Decode batch line of every DP rank in the end of the log, combined."""
    try:
        with open_regular(path) as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES).decode(errors="replace")
    except OSError:  # missing, unreadable, or a FIFO or a device: no stats
        return None
    latest: dict[str, dict[str, float | bool | str]] = {}
    for line in reversed(tail.splitlines()):
        fields = parse_stat_line(line)
        if fields is not None and fields["kind"] == "decode":
            latest.setdefault(_rank(str(fields["stamp"])), fields)
    return combine_ranks(_recent(list(latest.values()))) if latest else None


def combine_ranks(lines: list[dict[str, float | bool | str]]) -> dict[str, float | bool | str]:
    """One line's worth of fields for the whole server: sums, and means of ratios."""
    combined: dict[str, float | bool | str] = dict(lines[0])
    for key in {key for line in lines for key in line} - {"kind", "stamp"}:
        numbers = [
            v for line in lines if not isinstance(v := line.get(key), (bool, str)) and v is not None
        ]
        if numbers:
            total = sum(numbers)
            combined[key] = total / len(numbers) if _is_ratio(key) else total
    usages = [v for k in _POOL_USAGES if isinstance(v := combined.get(k), float)]
    if "token usage" not in combined and usages:
        combined["token usage"] = max(usages)
    if len(lines) > 1:
        combined["dp ranks"] = float(len(lines))
    return combined


_POOL_USAGES = ("full token usage", "swa token usage", "mamba usage")
_RANK = re.compile(r"\bDP(\d+)\b")
RECENT_S = 60.0
"""A rank whose last line is older than the newest by more than this has gone idle."""


def _is_ratio(key: str) -> bool:
    return "usage" in key or key.startswith("accept") or key.endswith("rate")


def _rank(stamp: str) -> str:
    match = _RANK.search(stamp)
    return match[1] if match else ""


def _recent(lines: list[dict[str, float | bool | str]]) -> list[dict[str, float | bool | str]]:
    """The lines no older than RECENT_S before the newest (idle ranks log nothing)."""
    times = [_seconds(str(line["stamp"])) for line in lines]
    if any(t is None for t in times):
        return lines
    newest = max(t for t in times if t is not None)
    return [
        line
        for line, t in zip(lines, times, strict=True)
        if t is not None and newest - t <= RECENT_S
    ]


def _seconds(stamp: str) -> float | None:
    """The time of a `%Y-%m-%d %H:%M:%S[.ms]` (or `%m-%d ...`) stamp, for comparing only."""
    match = re.match(r"(?:\d{4}-)?(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?)", stamp)
    if match is None:
        return None
    month, day, hour, minute, second = (float(g) for g in match.groups())
    return (((month * 31 + day) * 24 + hour) * 60 + minute) * 60 + second
