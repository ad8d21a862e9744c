"""The demo's threads open no link once the demo ends, and the teardown waits for one opening.

After `q`, the refusal thread's next look started a new agent behind the teardown, which had
already found none to end (CI saw one left by the quit test).
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from console.demo.side_links import SideLinks
from console.link.agent_link import AgentLink, LinkError


async def test_no_link_opens_once_closed_and_close_waits_for_one_opening() -> None:
    side = SideLinks()
    entered, release = threading.Event(), threading.Event()
    opened: list[str] = []

    async def slow_opener() -> AgentLink:
        entered.set()
        await asyncio.to_thread(release.wait, 10)
        opened.append("link")
        raise LinkError("stand-in: no agent here")

    side.use(slow_opener)
    opening = asyncio.ensure_future(side.open())
    await asyncio.to_thread(entered.wait, 10)
    closing = asyncio.ensure_future(asyncio.to_thread(side.close, 10.0))
    await asyncio.sleep(0.2)
    assert not closing.done(), "the teardown waits while an open is under way"
    release.set()
    await closing
    assert opened == ["link"]
    with pytest.raises(LinkError, match="no agent here"):
        await opening
    with pytest.raises(LinkError, match="the demo is ending"):
        await side.open()
