"""Waiting for the server at the start of a run.

A large model takes minutes to come up: SGLang refuses connections while it loads the weights,
then answers /health 503 while it warms up (srt/entrypoints/http_server.py:735-736). A router
answers /readiness 503 until a worker is healthy. None of that is a failure: the runner waits,
bounded by `--wait-for-server`, and says so in its log and in runner.json.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from agent.pipeline.inference.backends.base import Backend
from agent.pipeline.inference.pool import ServerPool

log = logging.getLogger("runner")

WAIT_POLL_S = 2.0
REMIND_S = 60.0
"""How often the log repeats that the runner still waits, and why."""


async def wait_for_servers(
    client: Backend,
    pool: ServerPool,
    timeout_s: float,
    wake: asyncio.Event,
    on_waiting: Callable[[str], None],
    stopping: Callable[[], bool],
) -> str | None:
    """Return once a server is ready (None), or with why none became ready in `timeout_s`."""
    deadline, said_at = time.monotonic() + timeout_s, None
    while not stopping():
        answers = [await client.healthy(server) for server in pool.servers]
        pairs = list(zip(pool.servers, answers, strict=True))
        reasons = "; ".join(f"{server.url}: {why}" for server, (_, why) in pairs)
        if any(ok for ok, _ in answers):
            for server, (ok, why) in pairs:
                if not ok:
                    pool.mark_down(server, why)
            if said_at is not None:
                log.warning("server ready after waiting: starting")
            return None
        left_s = deadline - time.monotonic()
        if left_s <= 0:
            return f"no {client.server_kind} server became ready within {timeout_s:g} s (--wait-for-server): {reasons}"
        said_at = _say_waiting(said_at, timeout_s, left_s, reasons, on_waiting)
        wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), min(WAIT_POLL_S, left_s))
    return None


def _say_waiting(
    said_at: float | None, timeout_s: float, left_s: float, reasons: str,
    on_waiting: Callable[[str], None],
) -> float:  # fmt: skip
    """Log that the runner waits (once, then every REMIND_S); returns when it last said so."""
    now = time.monotonic()
    if said_at is None:
        log.warning("waiting for server, up to %g s (--wait-for-server): %s", timeout_s, reasons)
        on_waiting(reasons)
        return now
    if now - said_at >= REMIND_S:
        log.warning("still waiting for server, %.0f s left: %s", left_s, reasons)
        return now
    return said_at
