"""What a probe hands on is bounded whatever the server said: a snapshot must always fit a line.

A /metrics of 6.3 MB (under the probe's 8 MB limit) with 75,000 distinct `dp_rank` labels made
75,000 parts: every snapshot became a 10.5 MB line that the console dropped, so the whole
dashboard stopped, not only the server panel. Every probe's reading passes through here.
"""

from __future__ import annotations

from dataclasses import replace

from agent.protocol import ServerPart, ServerStats

MAX_PARTS = 256
"""DP ranks, vLLM engines or workers behind a router: more than any real deployment has."""
MAX_PART_NAME_CHARS = 120
"""A rank, an engine or a worker's URL; a label value this long is not one."""


def bounded(stats: ServerStats) -> ServerStats:
    """`stats` with at most MAX_PARTS parts, each name cut to MAX_PART_NAME_CHARS; says so."""
    parts = tuple(_named(part) for part in stats.parts[:MAX_PARTS])
    hidden = len(stats.parts) - len(parts)
    if not hidden and parts == stats.parts:
        return stats
    detail = stats.detail
    if hidden:
        detail = f"{detail}; " if detail else ""
        detail += f"{hidden:,} more parts not shown (at most {MAX_PARTS})"
    return replace(stats, parts=parts, detail=detail)


def _named(part: ServerPart) -> ServerPart:
    if len(part.name) <= MAX_PART_NAME_CHARS:
        return part
    return replace(part, name=part.name[: MAX_PART_NAME_CHARS - 1] + "…")
