"""When a failed prompt is tried again, and when the whole run holds off (an API's rate limit).

A server's Retry-After (429/503) is honoured when it gives one, else the runner's own capped
backoff. A rate limit pauses every dispatch, not just one prompt's; an outage or a rate limit is
waited out and not counted against the prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time

from agent.pipeline.inference.client import Server, TransientError, backoff_s
from agent.pipeline.inference.pool import ServerPool
from agent.pipeline.inference.status import RunStats

log = logging.getLogger("runner")


class RetryPacing:
    """The waits between tries of a prompt, and the run's pause for a rate limit."""

    def __init__(self, name: str, stats: RunStats, stopping: asyncio.Event) -> None:
        self.name = name
        self._stats = stats
        self._stopping = stopping
        self._rng = random.Random()
        self.paused_until = 0.0
        """Monotonic time before which nothing new is sent (an API's rate limit)."""

    def paused_for(self, now: float) -> float:
        """Seconds of the rate-limit pause left (0 when none)."""
        return max(self.paused_until - now, 0.0)

    def counts_against_prompt(self, exc: TransientError, server: Server, pool: ServerPool) -> int:
        """1 when this failure is the prompt's own, 0 when it is waited out (rate limit, outage)."""
        self._stats.retries += 1
        if exc.rate_limited:
            return 0
        if exc.server_down:
            pool.mark_down(server, str(exc))
            return 0
        log.info("[%s] retrying after: %s", self.name, exc)
        return 1

    async def wait(self, failures: int, exc: Exception) -> None:
        """Wait before try `failures + 1`; a stop ends the wait at once."""
        retry_after = exc.retry_after_s if isinstance(exc, TransientError) else None
        if isinstance(exc, TransientError) and exc.rate_limited:
            self._pause_dispatch(
                retry_after if retry_after is not None else backoff_s(1, self._rng)
            )
        delay_s = retry_after if retry_after is not None else backoff_s(failures, self._rng)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), delay_s)

    def _pause_dispatch(self, seconds: float) -> None:
        """Send nothing new for `seconds`: the API's rate limit is the whole run's, not a prompt's."""
        until = time.monotonic() + seconds
        if until > self.paused_until:
            self.paused_until = until
            self._stats.rate_limited += 1
            log.warning("[%s] rate limited: dispatch paused for %.1f s", self.name, seconds)
