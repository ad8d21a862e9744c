"""A webhook that misbehaves never holds the sender, bloats the agent or passes for delivery.

Real hooks on loopback: one that answers 200 and then never ends its body, one that drips a byte
every second, one that redirects. Before: the endless body was read whole (the agent at +5 GB),
the drip held the sender for good (1 POST for 12 alerts) and kept the agent from stopping, and a
redirect was followed as a GET and counted as sent.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agent.protocol import NotifyConfig, PipelineConfig
from agent.watch import notify
from console.link.agent_link import LinkError
from console.link.local_link import open_local_link
from tests.support.hostile_hooks import DEADLINE_S, alert, hook, notifier_for, sending_to, settled
from tests.support.waits import until


async def test_an_endless_answer_is_not_read_past_its_status() -> None:
    with hook("endless") as (url, posts):
        async with sending_to(url) as notifier:
            await alert(notifier, "one")
            await settled(notifier, 1)
    assert (notifier.sent, notifier.dead_letters, len(posts)) == (1, 0, 1)


async def test_a_dripping_hook_costs_one_deadline_per_try_and_later_alerts_still_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(notify, "POST_DEADLINE_S", 1.5)
    monkeypatch.setattr(notify, "BACKOFF_S", 0.1)
    with hook("drip") as (url, posts):
        async with sending_to(url) as notifier:
            for kind in ("first", "second"):
                await alert(notifier, kind)
            await settled(notifier, 2)
    assert (notifier.sent, notifier.dead_letters) == (0, 2)
    assert len(posts) == 2 * notify.TRIES, "each try of each alert reached the hook"
    assert notifier.last_failure is not None
    assert "no answer within 1.5 s" in notifier.last_failure[0]


async def test_the_agent_stops_at_once_while_a_post_hangs() -> None:
    with hook("drip") as (url, posts):
        notifier, tasks = notifier_for(url)
        await alert(notifier, "one")
        await until(lambda: posts, "a POST", DEADLINE_S)
        started = time.monotonic()
        await tasks.close()
        await asyncio.wait_for(asyncio.get_running_loop().shutdown_default_executor(), 5.0)
    assert time.monotonic() - started < notify.POST_DEADLINE_S


async def test_a_redirect_is_no_delivery() -> None:
    with hook("redirect") as (url, posts):
        async with sending_to(url) as notifier:
            await alert(notifier, "one")
            await settled(notifier, 1)
    assert (notifier.sent, notifier.dead_letters) == (0, 1)
    assert notifier.last_failure is not None
    assert notifier.last_failure[0] == "HTTP 302"
    assert len(posts) == notify.TRIES, "the redirect was not followed"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x"])
async def test_only_http_and_https_are_spoken(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notify, "BACKOFF_S", 0.01)
    notifier, tasks = notifier_for(url)
    try:
        await alert(notifier, "one")
        await settled(notifier, 1)
    finally:
        await tasks.close()
    assert notifier.dead_letters == 1
    assert notifier.last_failure is not None
    assert "must be http or https" in notifier.last_failure[0]


async def test_a_hello_with_a_webhook_that_is_not_http_is_refused(state_dir: Path) -> None:
    hostile = PipelineConfig(notify=NotifyConfig("file:///x"))
    with pytest.raises(LinkError, match="notify.url must be an http or https URL"):
        await open_local_link(state_dir, hostile)
