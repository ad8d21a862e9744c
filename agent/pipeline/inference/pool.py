"""Spreading requests over servers, and waiting out the outages of every one of them.

A server (or a router) that fails as if gone is paused until its health check answers again.
One that comes back and fails again at once (a router whose /readiness still says ready while
its circuits are open) is checked again later and later, so an outage never turns into a storm
of requests. The pool gives up only when every server has failed for `down_timeout_s` without a
single success in between: a health check that says "ready" does not reset that clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from agent.pipeline.inference.backends.base import Backend
from agent.pipeline.inference.client import (
    FLAP_WINDOW_S,
    HEALTH_POLL_S,
    RECHECK_CAP_S,
    Server,
)

log = logging.getLogger("runner")


class ServerDownError(Exception):
    """Every server stayed unhealthy for longer than the runner is willing to wait."""


class ServerPool:
    """Picks the healthy server with the fewest requests in flight; watches sick ones recover."""

    def __init__(
        self,
        client: Backend,
        urls: tuple[str, ...],
        down_timeout_s: float,
        on_change: Callable[[], None],
    ) -> None:
        self.client = client
        self.servers = [Server(url) for url in urls]
        self.down_timeout_s = down_timeout_s
        self.health_changed = asyncio.Event()
        self._on_change = on_change
        self._watchers: set[asyncio.Task[None]] = set()

    @property
    def all_down(self) -> bool:
        """True while no server is taking requests."""
        return self.pick() is None

    def pick(self) -> Server | None:
        """The least-loaded healthy server, or None while all are down."""
        healthy = [s for s in self.servers if s.healthy]
        return min(healthy, key=lambda s: s.in_flight) if healthy else None

    async def acquire(self) -> Server:
        """A healthy server with one more request counted on it; waits out outages."""
        while (server := self.pick()) is None:
            self.health_changed.clear()
            try:
                await asyncio.wait_for(self.health_changed.wait(), self._patience_s())
            except asyncio.TimeoutError:
                raise self._gave_up() from None
        if self._patience_s() <= 0:
            raise self._gave_up()
        server.in_flight += 1
        return server

    def _patience_s(self) -> float:
        """How much longer to wait for a server, by the outage of the whole pool."""
        starts = [s.failing_since for s in self.servers]
        if any(start is None for start in starts):
            return self.down_timeout_s
        outage_s = time.monotonic() - max(start for start in starts if start is not None)
        return self.down_timeout_s - outage_s

    def _gave_up(self) -> ServerDownError:
        urls = ", ".join(s.url for s in self.servers)
        return ServerDownError(
            f"no {self.client.server_kind} server healthy for {self.down_timeout_s:g} s ({urls})"
        )

    def release(self, server: Server) -> None:
        """One request on `server` is over."""
        server.in_flight -= 1

    def succeeded(self, server: Server) -> None:
        """A request on `server` was answered: whatever outage it had is over."""
        server.failing_since = None
        server.recheck_s = HEALTH_POLL_S

    def mark_down(self, server: Server, reason: str) -> None:
        """Stop sending to `server` until its health check answers again."""
        now = time.monotonic()
        if server.failing_since is None:
            server.failing_since = now
        if not server.healthy:
            return
        server.healthy = False
        flapping = now - server.recovered_at < FLAP_WINDOW_S
        server.recheck_s = min(RECHECK_CAP_S, server.recheck_s * 2) if flapping else HEALTH_POLL_S
        log.warning("server %s unhealthy (%s): dispatch to it paused", server.url, reason)
        self._changed()
        task = asyncio.create_task(self._watch(server))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, server: Server) -> None:
        wait_s = server.recheck_s
        while True:  # polling is the only way to learn that a remote server is back
            await asyncio.sleep(wait_s)
            if (await self.client.healthy(server))[0]:
                break
            wait_s = HEALTH_POLL_S
        server.healthy = True
        server.recovered_at = time.monotonic()
        log.warning("server %s healthy again: dispatch resumed", server.url)
        self._changed()

    def _changed(self) -> None:
        self.health_changed.set()
        self._on_change()

    def close(self) -> None:
        """Stop watching."""
        for task in self._watchers:
            task.cancel()
