"""The agent serves every protocol method from one table: one handler per method, and no spares."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from agent.protocol import METHODS, Event
from agent.serving.agent_methods import AgentMethods
from agent.serving.handlers import Route, routes
from agent.serving.session import Session
from agent.state import StatePaths
from agent.wiring import AgentParts


class NullWriter:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass


async def ignore(event: Event) -> None:
    pass


def session_routes(tmp_path: Path) -> tuple[Route, ...]:
    (tmp_path / "jobs").mkdir()
    agent = AgentMethods(AgentParts(StatePaths(tmp_path), ignore))
    return routes(agent, Session(agent, asyncio.StreamReader(), NullWriter()))


async def test_every_method_has_exactly_one_handler_and_every_handler_one_method(
    tmp_path: Path,
) -> None:
    served = session_routes(tmp_path)
    per_method = Counter(each.method.name for each in served)
    assert sorted(per_method) == sorted(METHODS), "a method has no handler, or one is not known"
    assert [name for name, count in per_method.items() if count > 1] == [], "a method served twice"
    handlers = [getattr(each.handler, "__func__", each.handler) for each in served]
    assert len(set(handlers)) == len(handlers), "a handler serves two methods"


async def test_the_table_is_keyed_by_the_method_constants(tmp_path: Path) -> None:
    served = session_routes(tmp_path)
    assert all(METHODS[each.method.name] is each.method for each in served)
