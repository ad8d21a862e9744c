"""An https webhook: delivered over verified TLS, and a POST stuck in its handshake is abortable.

Before: the handshake ran inside http.client's connect, before the sender held any socket it
could shut down; a hook that dripped its handshake a byte at a time kept the stopping agent
waiting for the POST's thread until the socket timeout ended the handshake.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from pathlib import Path

import pytest
from aiohttp import web

from agent.watch import notify
from tests.support.hostile_hooks import DEADLINE_S, alert, notifier_for, settled
from tests.support.tls_hooks import self_signed_cert, tls_drip_hook
from tests.support.waits import until


async def test_an_https_hook_with_a_trusted_certificate_gets_the_alert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed_cert(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the only CA the sender's context trusts
    received: list[dict[str, object]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/topic", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
    notifier, tasks = notifier_for(f"https://127.0.0.1:{runner.addresses[0][1]}/topic")
    try:
        await alert(notifier, "over_tls")
        await settled(notifier, 1)
    finally:
        await tasks.close()
        await runner.cleanup()
    assert (notifier.sent, notifier.dead_letters) == (1, 0), notifier.last_failure
    assert [body["kind"] for body in received] == ["over_tls"]


async def test_the_agent_stops_at_once_while_a_post_is_in_its_tls_handshake() -> None:
    with tls_drip_hook() as (url, accepted):
        notifier, tasks = notifier_for(url)
        await alert(notifier, "one")
        await until(lambda: accepted, "a connection", DEADLINE_S)
        started = time.monotonic()
        await tasks.close()
        await asyncio.wait_for(asyncio.get_running_loop().shutdown_default_executor(), 10.0)
        took = time.monotonic() - started
    assert took < notify.TIMEOUT_S / 2, f"the POST's thread held the stop {took:.1f} s"
