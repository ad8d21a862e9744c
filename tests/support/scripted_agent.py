"""An agent that answers from a script, on the real wire: what the console gets is encoded and
decoded exactly as a real agent's would be, so the data may be as hostile as a test wants.

Each method answers with a fixed result, or fails with a fixed error; events are pushed to every
link the console opened. The file channel serves fixed bytes (the "host's" copy of a file).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from agent.protocol import (
    Done,
    ErrorInfo,
    ErrorResponse,
    Event,
    HelloResult,
    LineFramer,
    PingResult,
    Request,
    Response,
    StopResult,
    decode,
    encode,
    to_wire,
)
from console.link.agent_link import AgentLink
from console.link.bundle import local_bundle
from tests.support.sample_snapshot import JOBS, NOW

ALWAYS = {"snapshot.watch": Done(), "logs.subscribe": Done(), "logs.unsubscribe": Done()}


class ScriptedFiles:
    """The host's copy of every file is `content`."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    async def read(self, path: str) -> bytes | None:
        """The fixed content, whatever the path."""
        return self.content

    async def stage(self, path: str, content: bytes, mode: int) -> None:
        """Uploads are refused: a scripted host changes nothing."""
        raise OSError("the scripted host takes no uploads")

    async def remove(self, path: str) -> None:
        """Nothing to remove."""


class _Wire:
    """Both halves of one link: what the console writes is answered into what it reads."""

    def __init__(self, agent: ScriptedAgent) -> None:
        self.agent = agent
        self.reader = asyncio.StreamReader()
        self._framer = LineFramer()

    def write(self, data: bytes) -> None:
        for line in self._framer.feed(data):
            assert isinstance(line, bytes)
            request = decode(line)
            assert isinstance(request, Request)
            self.agent.requests.append(request)
            self.reader.feed_data(encode(self.agent.answer(request)))

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def write_eof(self) -> None:
        if not self.reader.at_eof():
            self.reader.feed_eof()

    async def close(self) -> None:
        self.write_eof()


class ScriptedAgent:
    """Answers `results[method]` (a result dataclass, or an ErrorInfo to fail with)."""

    def __init__(self, hello: HelloResult, results: dict[str, Any], file_content: bytes) -> None:
        self.hello = dataclasses.replace(hello, bundle_sha256=local_bundle().sha256)
        self.results = ALWAYS | results
        self.file_content = file_content
        self.requests: list[Request[object]] = []
        self._wires: list[_Wire] = []

    async def open(self) -> AgentLink:
        """A new link to this agent, hello done (the opener the app is given)."""
        wire = _Wire(self)
        self._wires.append(wire)
        link = AgentLink(wire.reader, wire, wire.close, "scripted agent")
        link.files = ScriptedFiles(self.file_content)
        await link.hello(None, local_bundle().sha256)
        return link

    def answer(self, request: Request[object]) -> Response | ErrorResponse:
        """The scripted answer to one request."""
        if request.method == "hello":
            return Response(request.id, to_wire(self.hello))
        if request.method == "ping":
            return Response(request.id, to_wire(PingResult(0.0)))
        result = self.results.get(request.method)
        if result is None:
            return ErrorResponse(request.id, ErrorInfo("not_found", f"no {request.method}"))
        if isinstance(result, ErrorInfo):
            return ErrorResponse(request.id, result)
        return Response(request.id, to_wire(result))

    def push(self, event: Event) -> None:
        """Send `event` on every open link."""
        for wire in self._wires:
            if not wire.reader.at_eof():
                wire.reader.feed_data(encode(event))


def scripted(name: str) -> ScriptedAgent:
    """An agent named `name` that stops the sample's first job when asked."""
    hello = HelloResult(1, "0.1.0", "", 1, name, NOW)
    return ScriptedAgent(hello, {"jobs.stop": StopResult(JOBS[0], "stopped")}, file_content=b"")


def stops(agent: ScriptedAgent) -> list[str]:
    """The stops `agent` was asked for."""
    return [request.method for request in agent.requests if request.method == "jobs.stop"]
