"""An aiohttp app served on a free loopback port for the length of a block: a peer a test writes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from aiohttp import web


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 at a port the system picks; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def answering_generate(text: str) -> AsyncIterator[str]:
    """A server whose `/generate` answers every POST with `text`, as JSON; yields its base URL."""

    async def generate(request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="application/json")

    app = web.Application()
    app.router.add_post("/generate", generate)
    async with serving(app) as url:
        yield url
