"""The agent's timeline as people read it: one row of cells per event, in local time.

Pure: no I/O and no Textual. The cells hold host text (subjects, messages); whoever shows them
sanitises them (the CLI and the events screen both go through `literal`).
"""

from __future__ import annotations

import time

from agent.protocol import TimelineEvent

COLUMNS = ("time", "severity", "event", "subject", "what happened")


def event_cells(event: TimelineEvent) -> tuple[str, str, str, str, str]:
    """Time, severity, kind, subject and message (with who asked, where someone did).

    Who asked is said once: events an older agent recorded have it in the message as well.
    """
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.ts))
    named = event.asked_by is not None and f"by {event.asked_by}" in event.message
    who = f" (asked by {event.asked_by})" if event.asked_by and not named else ""
    return when, event.severity, event.kind, event.subject, event.message + who
