"""Talking to SGLang, and spreading requests over servers.

`/generate` failures are told apart as retryable or permanent; `/health` and `/abort_request`
are wrapped; the pool pauses dispatch to unhealthy servers until their /health answers again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger("runner")

HEALTH_TIMEOUT_S = 10.0
HEALTH_POLL_S = 1.0
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


class TransientError(Exception):
    """Worth retrying: connection refused or reset, HTTP 5xx, a timeout."""

    def __init__(self, message: str, *, server_down: bool = False) -> None:
        super().__init__(message)
        self.server_down = server_down


class PermanentError(Exception):
    """Not worth retrying: HTTP 4xx such as a prompt longer than the context."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def backoff_s(attempt: int, rng: random.Random) -> float:
    """Capped exponential backoff with full jitter."""
    return rng.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt))


@dataclass(eq=False)
class Server:
    """One SGLang endpoint and what the runner knows of it."""

    url: str
    in_flight: int = 0
    healthy: bool = True


class SglangClient:
    """HTTP calls to SGLang's native API."""

    def __init__(self, session: aiohttp.ClientSession, request_timeout_s: float) -> None:
        self.session = session
        self.request_timeout = aiohttp.ClientTimeout(total=request_timeout_s)

    async def generate(self, server: Server, payload: dict[str, Any]) -> dict[str, Any]:
        """One /generate call; raises TransientError or PermanentError."""
        try:
            async with self.session.post(
                f"{server.url}/generate", json=payload, timeout=self.request_timeout
            ) as response:
                if response.status >= 500:
                    raise TransientError(f"HTTP {response.status}: {await _error_text(response)}")
                if response.status >= 400:
                    raise PermanentError(
                        f"HTTP {response.status}: {await _error_text(response)}", response.status
                    )
                body = await response.json(content_type=None)
        except (aiohttp.ClientConnectionError, ConnectionError) as exc:
            raise TransientError(f"cannot reach {server.url}: {exc}", server_down=True) from None
        except TimeoutError:
            raise TransientError(f"no answer within {self.request_timeout.total:g} s") from None
        except (aiohttp.ContentTypeError, ValueError) as exc:
            raise TransientError(f"answer is not JSON: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("output_ids"), list):
            raise TransientError(f"answer has no output_ids: {str(body)[:120]}")
        return body

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """Whether /health answers 200, and why not."""
        try:
            async with self.session.get(
                f"{server.url}/health", timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
            ) as response:
                return response.status == 200, f"HTTP {response.status}"
        except (aiohttp.ClientError, ConnectionError, TimeoutError) as exc:
            return False, str(exc) or type(exc).__name__

    async def abort(self, server: Server, rid: str) -> None:
        """Ask SGLang to stop generating `rid`; failures are ignored (it may be gone)."""
        try:
            async with self.session.post(
                f"{server.url}/abort_request", json={"rid": rid},
                timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S),
            ):  # fmt: skip
                pass
        except (aiohttp.ClientError, ConnectionError, TimeoutError):
            log.info("abort of %s on %s did not go through", rid, server.url)


async def _error_text(response: aiohttp.ClientResponse) -> str:
    text = (await response.text())[:300]
    try:
        body = json.loads(text)
        return str(body["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text.strip() or response.reason or ""


class ServerDownError(Exception):
    """Every server stayed unhealthy for longer than the runner is willing to wait."""


class ServerPool:
    """Picks the healthy server with the fewest requests in flight; watches sick ones recover."""

    def __init__(
        self,
        client: SglangClient,
        urls: tuple[str, ...],
        down_timeout_s: float,
        on_change: Callable[[], None],
    ) -> None:
        self.client = client
        self.servers = [Server(url) for url in urls]
        self.down_timeout_s = down_timeout_s
        self.all_down_since: float | None = None
        self.health_changed = asyncio.Event()
        self._on_change = on_change
        self._watchers: set[asyncio.Task[None]] = set()

    def pick(self) -> Server | None:
        """The least-loaded healthy server, or None while all are down."""
        healthy = [s for s in self.servers if s.healthy]
        return min(healthy, key=lambda s: s.in_flight) if healthy else None

    async def acquire(self) -> Server:
        """A healthy server with one more request counted on it; waits out outages."""
        while (server := self.pick()) is None:
            down_for = time.monotonic() - (self.all_down_since or time.monotonic())
            self.health_changed.clear()
            try:
                await asyncio.wait_for(self.health_changed.wait(), self.down_timeout_s - down_for)
            except TimeoutError:
                urls = ", ".join(s.url for s in self.servers)
                raise ServerDownError(
                    f"no SGLang server healthy for {self.down_timeout_s:g} s ({urls})"
                ) from None
        server.in_flight += 1
        return server

    def release(self, server: Server) -> None:
        """One request on `server` is over."""
        server.in_flight -= 1

    def mark_down(self, server: Server, reason: str) -> None:
        """Stop sending to `server` until its /health answers again."""
        if not server.healthy:
            return
        server.healthy = False
        log.warning("server %s unhealthy (%s): dispatch to it paused", server.url, reason)
        if self.pick() is None:
            self.all_down_since = time.monotonic()
        self._changed()
        task = asyncio.create_task(self._watch(server))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, server: Server) -> None:
        while True:  # polling is the only way to learn that a remote server is back
            if (await self.client.healthy(server))[0]:
                break
            await asyncio.sleep(HEALTH_POLL_S)
        server.healthy = True
        self.all_down_since = None
        log.warning("server %s healthy again: dispatch resumed", server.url)
        self._changed()

    def _changed(self) -> None:
        self.health_changed.set()
        self._on_change()

    def close(self) -> None:
        """Stop watching."""
        for task in self._watchers:
            task.cancel()
