"""The console's end of the wire: requests with futures, events in a queue, over any byte stream.

`AgentLink` does not know whether its bytes cross SSH or a local pipe; `ssh_link` and
`local_link` build one for each case. It never imports Textual, so the headless commands and the
app share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from agent.protocol import (
    AGENT_VERSION,
    HELLO,
    PIPELINE_APPLY,
    PROTOCOL_VERSION,
    AnyMethod,
    ByteReader,
    ErrorResponse,
    Event,
    HelloParams,
    HelloResult,
    Message,
    Method,
    PipelineApplyParams,
    PipelineConfig,
    ProtocolError,
    Request,
    Response,
    encode,
    parse_result,
    receive_messages,
)
from agent.protocol import ByteWriter as ProtocolByteWriter

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0

P = TypeVar("P")
R = TypeVar("R")


class LinkError(Exception):
    """The agent cannot be reached or used; the message is one line for the user."""


class AgentRequestError(LinkError):
    """The agent answered a request with an error."""

    def __init__(self, method: str, code: str, message: str) -> None:
        super().__init__(f"{method}: {message}")
        self.code = code
        self.detail = message


class ByteWriter(ProtocolByteWriter, Protocol):
    """A write half that can also say "no more input" (end of file)."""

    def write_eof(self) -> None: ...  # noqa: D102


class AgentLink:
    """One conversation with one agent: typed requests out, responses and events in."""

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        close: Callable[[], Awaitable[None]],
        description: str,
    ) -> None:
        self.description = description
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.hello_result: HelloResult | None = None
        self.config_differences: tuple[str, ...] = ()
        """How the config sent at hello differs from the one the agent runs (and keeps)."""
        self._config_sent: PipelineConfig | None = None
        self._reader = reader
        self._writer = writer
        self._close = close
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[AnyMethod, asyncio.Future[Any]]] = {}
        self.files: Any = None
        """A FileChannel to the same host (SFTP or local disk), set by whoever opened the link."""
        self.closed_reason: str | None = None
        self.closed = asyncio.Event()
        """Set once the agent side is gone; pending requests have failed by then."""
        self._receiver = asyncio.create_task(self._receive(), name=f"receive {description}")
        self._closing: asyncio.Future[None] | None = None

    async def hello(self, pipeline: PipelineConfig | None, bundle_sha256: str) -> HelloResult:
        """The first exchange; fails with both versions named unless the agent runs our bundle."""
        params = HelloParams(PROTOCOL_VERSION, f"eagle-console {AGENT_VERSION}", pipeline)
        result = await self.call(HELLO, params)
        if result.bundle_sha256 != bundle_sha256:
            raise LinkError(
                f"{self.description}: the agent runs version {result.agent_version} "
                f"(bundle {result.bundle_sha256[:12]}), this console ships {AGENT_VERSION} "
                f"(bundle {bundle_sha256[:12]}); reconnect to upgrade it"
            )
        self.hello_result = result
        self.config_differences = result.pipeline_differences
        self._config_sent = pipeline
        return result

    async def apply_pipeline(self, pipeline: PipelineConfig) -> tuple[str, ...]:
        """Have the agent run `pipeline` from now on, on purpose; what changed, one line each."""
        params = PipelineApplyParams(pipeline)
        key = f"apply-{secrets.token_hex(6)}"
        applied = await self.call(PIPELINE_APPLY, params, idempotency_key=key)
        if pipeline == self._config_sent:
            self.config_differences = ()
        return applied.differences

    async def call(
        self,
        method: Method[P, R],
        params: P,
        *,
        idempotency_key: str | None = None,
        timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> R:
        """Send one request and wait for its result, of the type `method` declares."""
        if self.closed_reason is not None:
            raise LinkError(f"{self.description}: link closed: {self.closed_reason}")
        request_id = next(self._ids)
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (method, future)
        try:
            self._writer.write(encode(Request(request_id, method.name, params, idempotency_key)))
            await self._writer.drain()
            return await asyncio.wait_for(future, timeout_s)
        except (ConnectionError, BrokenPipeError) as exc:
            raise LinkError(
                f"{self.description}: link lost while sending {method.name}: {exc}"
            ) from None
        except TimeoutError:
            raise LinkError(
                f"{self.description}: no answer to {method.name} in {timeout_s:g} s"
            ) from None
        finally:
            self._pending.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # failed by the reader while we were still sending: seen here

    async def next_event(self) -> Event | None:
        """The next event, or None once the link is closed."""
        if not self.events.empty():
            return self.events.get_nowait()
        getter = asyncio.ensure_future(self.events.get())
        closer = asyncio.ensure_future(self.closed.wait())
        try:
            await asyncio.wait({getter, closer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closer.cancel()
            if not getter.done():
                getter.cancel()
        return getter.result() if getter.done() and not getter.cancelled() else None

    async def close(self) -> None:
        """End the conversation and release the channel, once and to its end.

        The console's quit and the link's own worker both ask, and a caller that is cancelled
        meanwhile does not stop the closing half-way (with the attach's pipes left open).
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_once())
        await asyncio.shield(self._closing)

    async def _close_once(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.write_eof()
        self._receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._receiver
        self.closed_reason = self.closed_reason or "closed by the console"
        self.closed.set()
        await self._close()

    async def _receive(self) -> None:
        try:
            await receive_messages(self._reader, self._take, self._ignore)
            self._fail_all("the agent closed the connection")
        except Exception as exc:  # the transport's own errors too (asyncssh.ConnectionLost...)
            self._fail_all(f"connection lost: {exc}")

    async def _ignore(self, error: ProtocolError) -> None:
        """A line from the agent that is too long or not a message is logged and skipped."""
        log.warning("%s: ignored a bad line from the agent: %s", self.description, error)

    async def _take(self, message: Message) -> None:
        if isinstance(message, Event):
            self.events.put_nowait(message)
        elif isinstance(message, (Response, ErrorResponse)):
            self._resolve(message)

    def _resolve(self, message: Response | ErrorResponse) -> None:
        pending = self._pending.get(message.id) if message.id is not None else None
        if pending is None:
            if isinstance(message, ErrorResponse):
                log.warning("%s: agent error: %s", self.description, message.error.message)
            return
        method, future = pending
        if future.done():
            return
        if isinstance(message, ErrorResponse):
            future.set_exception(
                AgentRequestError(method.name, message.error.code, message.error.message)
            )
            return
        try:
            future.set_result(parse_result(method, message))
        except ProtocolError as exc:
            future.set_exception(
                LinkError(f"{method.name}: the agent's answer does not fit: {exc}")
            )

    def _fail_all(self, reason: str) -> None:
        self.closed_reason = reason
        self.closed.set()
        for method, future in self._pending.values():
            if not future.done():
                future.set_exception(LinkError(f"{self.description}: {method.name}: {reason}"))
