"""The links the demo's own threads open (its mishaps, its refusal): none once the demo ends.

A local link starts the agent when none runs. The refusal's thread looked every second; after
`q` its next look started a new agent behind the teardown, which found none to end (CI's run of
the quit test saw one left). So the threads open links only through here, and the teardown first
closes it: no link opens after that, and the teardown waits for any open under way to finish.
"""

from __future__ import annotations

import threading

from console.link.agent_link import AgentLink, LinkError
from console.link.host_connection import Opener

CLOSE_WAIT_S = 10.0
"""The longest the teardown waits for an open under way (an agent starting takes a second)."""


class SideLinks:
    """An opener for the demo's threads that stops opening when the demo ends."""

    def __init__(self) -> None:
        self._opener: Opener | None = None
        self._lock = threading.Condition()
        self._opening = 0
        self._closed = False

    def use(self, opener: Opener) -> None:
        """Open links with `opener` (the demo's host, once its config is written)."""
        self._opener = opener

    async def open(self) -> AgentLink:
        """A link, as the opener makes one; a LinkError once the demo is ending."""
        with self._lock:
            opener = self._opener
            if self._closed or opener is None:
                raise LinkError("the demo is ending: no new link")
            self._opening += 1
        try:
            return await opener()
        finally:
            with self._lock:
                self._opening -= 1
                self._lock.notify_all()

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Open no more, and wait (at most `wait_s`) for the opens under way."""
        with self._lock:
            self._closed = True
            self._lock.wait_for(lambda: self._opening == 0, wait_s)
