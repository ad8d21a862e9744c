"""A `log_lagged` notice from the agent: the console subscribes again from the offset it names."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.protocol import AnyMethod, Event, LogLagged, LogSubscribeParams
from console.link.agent_link import AgentLink
from console.link.host_connection import HostConnection


class RecordingLink:
    """Stands in for an AgentLink: records the requests made through it."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, object]] = []
        self.asked = asyncio.Event()

    async def call(self, method: AnyMethod, params: object, **_: object) -> Any:
        self.requests.append((method.name, params))
        self.asked.set()
        return None


async def never() -> AgentLink:
    raise AssertionError("not opened in this test")


async def test_a_lagged_log_is_followed_again_from_its_resume_offset() -> None:
    events: list[Event] = []
    connection = HostConnection("gpu", never, lambda state: None, lambda host, e: events.append(e))
    link = RecordingLink()
    connection.link = link  # type: ignore[assignment]
    connection.log_offsets["sglang"] = (100, 7)
    notice = Event("log_lagged", LogLagged("sglang", 4096, 7, "the console fell behind"))
    connection._handle_event(notice)
    await asyncio.wait_for(link.asked.wait(), 5)
    assert link.requests == [("logs.subscribe", LogSubscribeParams("sglang", 4096, 7))]
    assert connection.log_offsets["sglang"] == (4096, 7)
    assert events == [notice]


async def test_a_notice_for_a_log_no_longer_followed_is_left_alone() -> None:
    connection = HostConnection("gpu", never, lambda state: None, lambda host, e: None)
    link = RecordingLink()
    connection.link = link  # type: ignore[assignment]
    connection._handle_event(Event("log_lagged", LogLagged("job:old", 10, None, "behind")))
    await asyncio.sleep(0)
    assert link.requests == []
    assert "job:old" not in connection.log_offsets
