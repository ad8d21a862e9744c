"""One host's link, kept up for as long as the console runs: connect, watch, reconnect.

The console never exits because a link dropped: it retries with capped exponential backoff,
forever, and says what it is doing. An untrusted host key is the one failure it does not retry
by itself, because only the user can decide to trust a key. Log subscriptions are remembered with
their byte offsets and renewed after a reconnect, or after the agent cut a lagging one off, so no
line is lost or shown twice. No Textual here: the app turns these callbacks into messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.protocol import (
    LOGS_SUBSCRIBE,
    PING,
    SNAPSHOT_WATCH,
    Event,
    LogChunk,
    LogLagged,
    LogSubscribeParams,
    PingParams,
    WatchParams,
)
from console.link.agent_link import AgentLink, LinkError
from console.link.host_keys import OfferedKey, UntrustedHostKeyError

log = logging.getLogger(__name__)

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
PING_EVERY_S = 5.0
SILENT_AFTER_S = 10.0
"""A ping unanswered this long makes the link's detail say the agent is slow; it stays up."""
PING_GIVE_UP_S = 3600.0
"""A ping is sent again after this long without an answer (the transport still alive)."""
SNAPSHOT_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True)
class LinkState:
    """Where one host's link stands."""

    host: str
    status: str
    """connecting, up, down or refused (host key not trusted)."""
    detail: str = ""
    attempt: int = 0
    retry_at: float | None = None
    agent_version: str | None = None
    latency_ms: float | None = None
    since: float = 0.0
    offered_key: OfferedKey | None = None
    config_differences: tuple[str, ...] = ()
    """How this console's config differs from the one the agent runs (it keeps its own)."""


Opener = Callable[[], Awaitable[AgentLink]]


class HostConnection:
    """Keeps one host's link up and reports states and events through callbacks."""

    def __init__(
        self,
        host: str,
        opener: Opener,
        on_state: Callable[[LinkState], None],
        on_event: Callable[[str, Event], None],
    ) -> None:
        self.host = host
        self.opener = opener
        self.on_state = on_state
        self.on_event = on_event
        self.link: AgentLink | None = None
        self.state = LinkState(host, "connecting", since=time.time())
        self.log_offsets: dict[str, tuple[int, int | None]] = {}
        """Followed logs: name -> (next byte offset, inode)."""
        self._retry_now = asyncio.Event()
        self._renewals: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Connect and reconnect forever."""
        attempt = 0
        while True:
            self._set("connecting", attempt=attempt)
            try:
                self.link = await self.opener()
            except UntrustedHostKeyError as exc:
                self._set("refused", detail=str(exc), offered_key=exc.offered)
                await self._wait_retry(None)
                continue
            except LinkError as exc:
                delay = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
                self._set("down", detail=str(exc), attempt=attempt, retry_at=time.time() + delay)
                attempt += 1
                await self._wait_retry(delay)
                continue
            attempt = 0
            reason = await self._serve(self.link)
            self.link = None
            self._set("down", detail=reason, retry_at=time.time() + BACKOFF_S[0])
            await self._wait_retry(BACKOFF_S[0])

    async def close(self) -> None:
        """Close the link, if one is up (the app calls this on its way out)."""
        if self.link is not None:
            await self.link.close()

    def retry_now(self) -> None:
        """Skip the wait (after the user pinned a key, or pressed reconnect)."""
        self._retry_now.set()

    async def follow_log(self, name: str, offset: int = 0, inode: int | None = None) -> None:
        """Follow a log from `offset`; renewed from where it got to after every reconnect."""
        self.log_offsets[name] = (offset, inode)
        if self.link is not None:
            await self.link.call(LOGS_SUBSCRIBE, LogSubscribeParams(name, offset, inode))

    async def _serve(self, link: AgentLink) -> str:
        hello = link.hello_result
        self._set(
            "up", agent_version=hello.agent_version if hello else None,
            config_differences=link.config_differences,
        )  # fmt: skip
        try:
            await link.call(SNAPSHOT_WATCH, WatchParams(SNAPSHOT_INTERVAL_S))
            for name, (offset, inode) in self.log_offsets.items():
                await link.call(LOGS_SUBSCRIBE, LogSubscribeParams(name, offset, inode))
        except LinkError as exc:
            await link.close()
            return str(exc)
        pinger = asyncio.create_task(self._ping_forever(link))
        try:
            while (event := await link.next_event()) is not None:
                self._handle_event(event)
            return link.closed_reason or "the agent closed the link"
        finally:
            pinger.cancel()
            await link.close()

    def _handle_event(self, event: Event) -> None:
        if event.event == "log" and isinstance(event.data, LogChunk):
            self.log_offsets[event.data.name] = (event.data.end_offset, event.data.inode)
        elif isinstance(event.data, LogLagged) and event.data.name in self.log_offsets:
            lagged = event.data  # the agent stopped pushing this log: ask again from where it was
            self.log_offsets[lagged.name] = (lagged.resume_offset, lagged.inode)
            task = asyncio.create_task(self.follow_log(lagged.name, *self.log_offsets[lagged.name]))
            self._renewals.add(task)
            task.add_done_callback(self._renewed)
        self.on_event(self.host, event)

    def _renewed(self, task: asyncio.Task[None]) -> None:
        """A failed renewal is retried by the next reconnect, which renews every followed log."""
        self._renewals.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("%s: renewing a log subscription failed: %s", self.host, task.exception())

    async def _ping_forever(self, link: AgentLink) -> None:
        """Ping to measure the latency, and say so when the agent is slow to answer.

        A slow answer never ends the link: the agent may be busy (a stop walking /proc, a
        loaded machine) while the transport is fine, and cutting the link then left runs
        stopped half-way. A dead transport ends it instead: SSH's keepalive, or the
        local agent's pipes closing.
        """
        while True:
            sent = time.monotonic()
            answer = asyncio.ensure_future(link.call(PING, PingParams(), timeout_s=PING_GIVE_UP_S))
            try:
                while not answer.done():
                    await asyncio.wait({answer}, timeout=SILENT_AFTER_S)
                    if not answer.done():
                        self._set("up", detail=_silent(time.monotonic() - sent))
                answer.result()
            except LinkError:
                if link.closed.is_set():
                    return  # _serve sees the closed link and reconnects
                continue  # no answer in PING_GIVE_UP_S, yet the transport lives: ask again
            finally:
                answer.cancel()
            self._set("up", latency_ms=(time.monotonic() - sent) * 1000)
            await asyncio.sleep(PING_EVERY_S)

    async def _wait_retry(self, delay_s: float | None) -> None:
        self._retry_now.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._retry_now.wait(), delay_s)

    def _set(self, status: str, **changes: object) -> None:
        keep = (
            {"agent_version": self.state.agent_version,
             "config_differences": self.state.config_differences}
            if status == "up" else {}
        )  # fmt: skip
        since = self.state.since if status == self.state.status else time.time()
        fields = {"status": status, "since": since, **keep, **changes}
        self.state = LinkState(self.host, **fields)  # type: ignore[arg-type]
        self.on_state(self.state)


def _silent(waited_s: float) -> str:
    return f"agent silent {waited_s:.0f} s (busy; the link stays up)"
