"""On each connection, "while you were away": a summary of what happened since the last one.

The agent keeps its timeline whether or not a console watches; this group asks it, once per
connection, for the events since this console last saw the host, and shows a one-line toast.
The first connection ever shows nothing (there is no "since"), and neither does a quiet span.
The last-seen time is the agent's clock, taken from the snapshots, and is written at most every
MARK_EVERY_S, and when the link drops.
"""

from __future__ import annotations

import logging

from textual.app import App

from agent.protocol import EVENTS_LIST, EventsList, EventsParams, Snapshot
from console.link.agent_link import LinkError
from console.link.host_connection import LinkState
from console.link.last_seen import LastSeen
from console.model.away import away_summary
from console.ui.actions.base import HostActions, Hosts

log = logging.getLogger(__name__)

MARK_EVERY_S = 10.0
"""How often the last-seen time is written while connected (a crash loses at most this)."""
SUMMARY_TIMEOUT_S = 20.0


class AwayActions(HostActions):
    """Greets each (re)connection with what happened while the console was not looking."""

    def __init__(self, app: App[None], hosts: Hosts, last_seen: LastSeen | None) -> None:
        super().__init__(app, hosts)
        self.last_seen = last_seen
        self._greeted: set[str] = set()
        self._marked_at: dict[str, float] = {}

    def link_changed(self, state: LinkState) -> None:
        """A link that is not up will be greeted again; remember the last snapshot it gave."""
        if state.status == "up" or state.host not in self._greeted:
            return
        self._greeted.discard(state.host)
        snapshot = self.snapshot(state.host)
        if snapshot is not None:
            self._mark(state.host, snapshot.taken_at)

    def snapshot_seen(self, host: str, snapshot: Snapshot) -> None:
        """The first snapshot of a connection asks for the summary; every one keeps the time."""
        if self.last_seen is None:
            return
        if host not in self._greeted:
            self._greeted.add(host)
            before = self.last_seen.get(host)
            if before is not None and snapshot.taken_at > before:
                self.in_worker(self._summarise(host, before, snapshot.taken_at), f"away {host}")
            self._mark(host, snapshot.taken_at)
        elif snapshot.taken_at - self._marked_at.get(host, 0.0) >= MARK_EVERY_S:
            self._mark(host, snapshot.taken_at)

    def _mark(self, host: str, ts: float) -> None:
        if self.last_seen is not None:
            self._marked_at[host] = ts
            self.last_seen.mark(host, ts)

    async def _summarise(self, host: str, before: float, now: float) -> None:
        link = self.hosts.connections[host].link
        if link is None:
            return
        params = EventsParams(since_s=now - before + 1.0)
        try:
            found: EventsList = await link.call(EVENTS_LIST, params, timeout_s=SUMMARY_TIMEOUT_S)
        except LinkError as exc:  # an agent too old to keep events, or the link dropped again
            log.info("%s: no summary of the time away: %s", host, exc)
            return
        summary = away_summary(found.events, before)
        if summary is not None:
            self.app.notify(f"{host}: {summary}", timeout=20)
