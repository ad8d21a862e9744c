"""Why a server could not be asked, in a person's words: refused, unresolvable, silent."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest

from agent.probes.unreachable import unreachable_reason


async def reason_for(url: str, timeout_s: float = 5.0) -> str:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
        with pytest.raises((aiohttp.ClientError, asyncio.TimeoutError)) as caught:
            await session.get(url)
    return unreachable_reason(caught.value, timeout_s)


async def test_a_closed_port_is_nothing_listening_there() -> None:
    reason = await reason_for("http://127.0.0.1:1/health")
    assert reason == (
        "nothing listens on 127.0.0.1:1 (connection refused): is the server up, on that port?"
    )


async def test_a_name_that_does_not_resolve_names_the_host() -> None:
    reason = await reason_for("http://no-such-host.invalid:30000/health")
    assert reason == "cannot resolve no-such-host.invalid: check the url's host name"


async def test_a_server_that_accepts_and_never_answers_is_a_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        port = listener.getsockname()[1]
        reason = await reason_for(f"http://127.0.0.1:{port}/health", timeout_s=0.5)
    finally:
        listener.close()
    assert reason.startswith("no answer within 0.5 s")
