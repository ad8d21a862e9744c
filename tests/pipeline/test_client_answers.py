"""How the runner's client reads each kind of error answer a real server or router gives."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from agent.pipeline.inference.client import (
    AbortOutcome,
    RejectedError,
    Server,
    SglangClient,
    TransientError,
)
from tests.support.loopback_app import serving

ANSWERS: dict[str, tuple[int, Any]] = {
    # srt/entrypoints/http_server.py:2246-2250
    "value": (400, {"error": {"message": "top_p must be in (0, 1], got 2.0."}}),
    # http_server.py:937-939 and srt/utils/auth.py:191-201
    "contract": (400, {"error": "unknown field `x`, expected one of `max_new_tokens`"}),
    "auth": (401, {"error": "Unauthorized"}),
    # http_server.py:578-631 (HTTPException: the queue is full, scheduler.py:3552-3590)
    "queue": (503, {"object": "error", "message": "The request queue is full.", "type": "503",
                    "param": None, "code": 503}),
    # sglang-router 0.3.2, every worker dead or its circuit open
    "no_workers": (503, {"error": {"type": "Service Unavailable", "code": "no_available_workers",
                                   "message": "No available workers (all circuits open or unhealthy)"}}),
    "rate_limited": (429, {"error": {"message": "Too Many Requests"}}),
}  # fmt: skip


@contextlib.asynccontextmanager
async def answering() -> AsyncIterator[str]:
    async def generate(request: web.Request) -> web.Response:
        status, body = ANSWERS[(await request.json())["rid"]]
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_post("/generate", generate)
    async with serving(app) as url:
        yield url


async def answer_to(kind: str) -> Exception:
    async with answering() as url, aiohttp.ClientSession() as session:
        client = SglangClient(session, 10.0)
        with pytest.raises((RejectedError, TransientError)) as caught:
            await client.generate(Server(url), {"rid": kind})
        return caught.value


async def test_refusals_keep_the_servers_message_and_status() -> None:
    value, contract, auth = [await answer_to(kind) for kind in ("value", "contract", "auth")]
    assert isinstance(value, RejectedError)
    assert (value.status, value.server_message) == (400, "top_p must be in (0, 1], got 2.0.")
    assert isinstance(contract, RejectedError)
    assert contract.server_message == "unknown field `x`, expected one of `max_new_tokens`"
    assert isinstance(auth, RejectedError)
    assert (auth.status, str(auth)) == (401, "HTTP 401: Unauthorized")


async def test_a_routers_no_workers_503_is_an_outage_and_other_503s_are_retried() -> None:
    no_workers, queue, limited = [
        await answer_to(k) for k in ("no_workers", "queue", "rate_limited")
    ]
    assert isinstance(no_workers, TransientError)
    assert no_workers.server_down
    assert isinstance(queue, TransientError)
    assert not queue.server_down
    assert str(queue) == "HTTP 503: The request queue is full."
    assert isinstance(limited, TransientError)  # a 429 is "not now", never the prompt's fault


async def test_abort_says_when_there_is_no_abort_request() -> None:
    async with answering() as url, aiohttp.ClientSession() as session:
        outcome = await SglangClient(session, 10.0).abort(Server(url), "r-1")
    assert outcome is AbortOutcome.UNSUPPORTED
