"""The agent serves every protocol method from one table: one handler per method, and no spares."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.core import AgentCore
from agent.protocol import METHODS, Event
from agent.session import Session
from agent.state import StatePaths


class NullWriter:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


async def ignore(event: Event) -> None:
    pass


async def test_every_method_has_exactly_one_handler_and_every_handler_one_method(
    tmp_path: Path,
) -> None:
    (tmp_path / "jobs").mkdir()
    core = AgentCore(StatePaths(tmp_path), ignore)
    table = Session(core, asyncio.StreamReader(), NullWriter()).handlers
    assert sorted(table) == sorted(METHODS)
    served = [getattr(handler, "__func__", handler) for handler in table.values()]
    assert len(set(served)) == len(served), "a handler serves two methods"
