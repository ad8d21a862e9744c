"""`eagle-console events HOST [--since 2h] [--json]`: what happened on a host, watched or not.

The agent keeps the timeline (jobs, alerts, budgets, guard stops, the server, deploys) whether
or not a console was attached; this prints it. Host text is sanitised and never read as markup;
JSON escapes control characters itself.
"""

from __future__ import annotations

import json
import re

from rich.console import Console

from agent.protocol import EVENTS_LIST, EventsList, EventsParams, TimelineEvent, to_wire
from console.config import HostConfig
from console.link.host_link import open_host_link
from console.model.safe_text import literal
from console.model.timeline import event_cells

UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def parse_span(text: str) -> float:
    """Seconds in `2h`, `30m`, `90s`, `1d` or a bare number of seconds; ValueError otherwise."""
    match = _SPAN.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a span of time (like 90s, 30m, 2h or 1d)")
    return float(match[1]) * UNITS_S[match[2] or "s"]


async def fetch_events(host: HostConfig, since_s: float) -> EventsList:
    """The host's events of the last `since_s` seconds."""
    link = await open_host_link(host)
    try:
        found: EventsList = await link.call(EVENTS_LIST, EventsParams(since_s=since_s))
        return found
    finally:
        await link.close()


def print_events(events: EventsList, out: Console, *, as_json: bool) -> None:
    """One line per event, oldest first: a table-like line for people or a JSON object."""
    for event in events.events:
        if as_json:
            out.file.write(json.dumps(to_wire(event)) + "\n")
        else:
            out.print(literal(event_line(event)))
    if not events.events and not as_json:
        out.print(literal("no events in that span"))


def event_line(event: TimelineEvent) -> str:
    """`2026-12-02 01:50:07  warning  budget_reached  B3_math  message (asked by ...)`."""
    when, severity, kind, subject, message = event_cells(event)
    return f"{when}  {severity:<7}  {kind:<14}  {subject}  {message}"
