"""A chat stream is folded event by event as it comes, in linear work.

A hostile server's 320,000 tiny events (15 MB, under the byte limit) froze the runner: every
event's token ids were copied onto all before them, and all events were held before the fold.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from agent.pipeline.inference.backends.chat import ChatAnswer
from agent.pipeline.inference.backends.openai_http import OpenAIClient
from agent.pipeline.inference.client import Server
from tests.support.loopback_app import serving


def event(ids: list[int], text: str) -> dict[str, object]:
    return {"choices": [{"delta": {"content": text}, "token_ids": ids}]}


def test_token_ids_and_text_grow_in_place_never_copied() -> None:
    answer = ChatAnswer()
    answer.add(event([5], "a"))
    first = answer.token_ids
    for index in range(1, 100):
        answer.add(event([index], "b"))
    assert answer.token_ids is first, "each event's ids must extend the list, not copy it"
    assert answer.token_ids == [5, *range(1, 100)]
    assert answer.content == "a" + "b" * 99


@contextlib.asynccontextmanager
async def stream_held_after_one_event(go_on: asyncio.Event) -> AsyncIterator[str]:
    """A server that sends one event, then waits for `go_on` before the rest and [DONE]."""

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(f"data: {json.dumps(event([5], 'a'))}\n\n".encode())
        await go_on.wait()
        await response.write(f"data: {json.dumps(event([6], 'b'))}\n\ndata: [DONE]\n\n".encode())
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    async with serving(app) as url:
        yield url


async def test_each_event_is_handed_on_before_the_stream_ends() -> None:
    go_on = asyncio.Event()
    async with stream_held_after_one_event(go_on) as url, aiohttp.ClientSession() as session:
        events = OpenAIClient(session, 30.0, None).stream(Server(url), "chat/completions", {})
        first = await asyncio.wait_for(anext(events), timeout=10)  # held events never come
        assert first["choices"][0]["token_ids"] == [5]
        go_on.set()
        rest = [item async for item in events]
    assert [item["choices"][0]["token_ids"] for item in rest] == [[6]]
