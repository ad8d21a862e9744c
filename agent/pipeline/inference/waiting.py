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

from agent.pipeline.inference.client import SglangClient
from agent.pipeline.inference.pool import ServerPool

log = logging.getLogger("runner")

WAIT_POLL_S = 2.0


async def wait_for_servers(
    client: SglangClient,
    pool: ServerPool,
    timeout_s: float,
    wake: asyncio.Event,
    on_waiting: Callable[[str], None],
    stopping: Callable[[], bool],
) -> str | None:
    """Return once a server is ready (None), or with why none became ready in `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    waiting = False
    while not stopping():
        answers = [await client.healthy(server) for server in pool.servers]
        reasons = "; ".join(
            f"{s.url}: {why}" for s, (_, why) in zip(pool.servers, answers, strict=True)
        )
        if any(ok for ok, _ in answers):
            for server, (ok, why) in zip(pool.servers, answers, strict=True):
                if not ok:
                    pool.mark_down(server, why)
            if waiting:
                log.warning("server ready after waiting: starting")
            return None
        if time.monotonic() >= deadline:
            return f"no SGLang server became ready within {timeout_s:g} s (--wait-for-server): {reasons}"
        if not waiting:
            waiting = True
            log.warning(
                "waiting for server, up to %g s (--wait-for-server): %s", timeout_s, reasons
            )
            on_waiting(reasons)
        wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(
                wake.wait(), min(WAIT_POLL_S, max(deadline - time.monotonic(), 0.01))
            )
    return None
