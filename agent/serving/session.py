"""One console connection: read request lines, answer each, never let a bad line kill the link.

A malformed, oversized or unknown request gets an error response and the session goes on. Only
end of input ends it. Anything a handler raises that is not an `AgentError` is logged with its
traceback to the daemon log and answered as an internal error.

Requests are answered side by side, each in a task of its own: a stop that waits out a job's
grace of minutes must not hold back the ping sent after it, or the console takes a busy agent
for a dead link. At most MAX_REQUESTS_IN_FLIGHT run at once per console; the next line is
read only when one of them is done, so a console that floods requests only slows itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from agent.errors import AgentError
from agent.journal.idempotency import KeyReusedError
from agent.logs import NamedLog, read_chunk
from agent.protocol import (
    HELLO,
    METHODS,
    ByteReader,
    ByteWriter,
    Done,
    ErrorCode,
    ErrorInfo,
    ErrorResponse,
    Event,
    HelloParams,
    LogLagged,
    LogSubscribeParams,
    LogUnsubscribeParams,
    Message,
    PipelineConfig,
    ProtocolError,
    Request,
    Response,
    Snapshot,
    WatchParams,
    WireMemo,
    encode,
    encode_result,
    receive_messages,
    to_wire,
)
from agent.serving.agent_methods import AgentMethods
from agent.serving.handlers import Handler, handler_table
from agent.serving.limits import LimitError, check_request
from agent.serving.outbox import LOW_WATER_BYTES, Outbox
from agent.state.health import WRITE_ERRNOS
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)

FOLLOW_POLL_S = 0.25
"""How soon a log that just grew is looked at again."""
FOLLOW_IDLE_POLL_S = 1.0
"""The longest wait between looks at a log that has not grown: the wait doubles up to it."""
FOLLOW_RETRY_S = 2.0
"""How often a log that cannot be read (a FIFO in its place, say) is looked at again."""
LAG_CUTOFF_S = 10.0
"""A log follower whose console has not read what was sent for this long is cut off."""
MAX_REQUESTS_IN_FLIGHT = 32
"""Requests of one console answered at once; more wait (unread) until one is done."""


class Session:
    """Serves one connected console until its input ends."""

    def __init__(
        self, agent: AgentMethods, reader: ByteReader, writer: ByteWriter,
        abort: Callable[[], None] = lambda: None,
    ) -> None:  # fmt: skip
        self.agent = agent
        self.parts = agent.parts
        self.client = "console (before hello)"
        self.pipeline: PipelineConfig | None = None
        """The config this console sent at hello: it starts nothing while ours differs."""
        self.reader = reader
        self.outbox = Outbox(writer, lambda reason: abort())
        self._wire_memo = WireMemo()
        """The last snapshot this console asked for, as sent: unchanged datasets reuse it."""
        self.greeted = False
        self.tasks = TaskOwner("session")
        """Owns this console's follows, snapshot push and writer; closed when the session ends."""
        self._follows: dict[str, asyncio.Task[None]] = {}
        self.handlers = handler_table(agent, self)
        self._slots = asyncio.Semaphore(MAX_REQUESTS_IN_FLIGHT)

    async def run(self) -> None:
        """Answer every line until end of input (or until the console is cut off)."""
        _ = self.tasks.spawn(self.outbox.run(), "outbox")
        try:
            await receive_messages(
                self.reader, self._take, self._refuse, stop=lambda: self.outbox.closed
            )
        finally:
            await self.tasks.close()

    def offer_event(self, data: bytes) -> None:
        """An encoded event for this console, if it keeps up (else it is cut off)."""
        self.outbox.offer(data)

    async def subscribe_log(self, request: Request[LogSubscribeParams]) -> Done:
        """Push new lines of a log to this console (logs.subscribe)."""
        params = request.params
        log = await asyncio.to_thread(self.agent.logs.named_log, params.name)
        self._stop_task(params.name)
        self._follows[params.name] = self.tasks.spawn(
            self._follow(log, params.offset, params.inode), f"follow {params.name}"
        )
        return Done()

    async def watch_snapshots(self, request: Request[WatchParams]) -> Done:
        """Push snapshots to this console (snapshot.watch)."""
        params = request.params
        self._stop_task("#snapshot")
        self._follows["#snapshot"] = self.tasks.spawn(
            self._push_snapshots(params.interval_s), "snapshot push"
        )
        return Done()

    def _stop_task(self, name: str) -> None:
        previous = self._follows.pop(name, None)
        if previous is not None:
            previous.cancel()

    async def _push_snapshots(self, interval_s: float) -> None:
        """Hand this console every snapshot the daemon's observer takes, until cancelled.

        The console takes no scan of its own: its outbox holds only the latest snapshot, so one
        that stops reading costs one pending snapshot. Its interval may make the observer look
        more often while it watches.
        """
        with self.parts.observer.watching(interval_s, self.outbox.put_snapshot):
            await asyncio.Event().wait()

    async def unsubscribe_log(self, request: Request[LogUnsubscribeParams]) -> Done:
        """Stop pushing a log to this console (logs.unsubscribe)."""
        self._stop_task(request.params.name)
        return Done()

    async def _follow(self, log: NamedLog, offset: int, inode: int | None) -> None:
        """Push every new line of `log` after `offset`, exactly once, until unsubscribed.

        Lines are read only while the console keeps up; one that has not taken what was sent
        within LAG_CUTOFF_S is cut off from this log with a `log_lagged` notice that says where
        to subscribe again from. A log that stays still is looked at less and less often, down
        to once every FOLLOW_IDLE_POLL_S.
        """
        wait_s = FOLLOW_POLL_S
        while True:
            if not await self.outbox.wait_for_room(LOW_WATER_BYTES, LAG_CUTOFF_S):
                self._lagged(log.name, offset, inode)
                return
            try:
                chunk = await asyncio.to_thread(read_chunk, log, offset, inode)
            except OSError:  # a FIFO or a device in the log's place: look again later
                await asyncio.sleep(FOLLOW_RETRY_S)
                continue
            moved = chunk.end_offset != offset or chunk.reset
            if moved and not self.outbox.offer(encode(Event("log", chunk))):
                return
            offset, inode = chunk.end_offset, chunk.inode if chunk.inode is not None else inode
            wait_s = FOLLOW_POLL_S if moved else min(2 * wait_s, FOLLOW_IDLE_POLL_S)
            if not moved or chunk.end_offset >= chunk.size_bytes:
                await asyncio.sleep(wait_s)

    def _lagged(self, name: str, offset: int, inode: int | None) -> None:
        if self.outbox.closed:
            return
        self._follows.pop(name, None)
        reason = (
            f"the console had not read {self.outbox.queued_bytes:,} bytes after {LAG_CUTOFF_S:g} s; "
            f"subscribe again from byte {offset} to go on"
        )
        self.outbox.put_notice(encode(Event("log_lagged", LogLagged(name, offset, inode, reason))))

    async def send(self, message: Message) -> None:
        """Queue one message (waits while this console's queue is full)."""
        await self.outbox.put(encode(message))

    async def _send_result(self, request_id: int, result: object) -> None:
        """Queue the response to a request.

        A snapshot may hold thousands of datasets, and converting and encoding it held the loop
        for up to a second at 5,000 (bench_daemon: pings waited on it): it is done in a thread,
        as the observer's are, reusing what this console was sent last time for unchanged ones.
        """
        if isinstance(result, Snapshot):
            line = await asyncio.to_thread(encode_result, request_id, result, self._wire_memo)
        else:
            line = encode(Response(request_id, to_wire(result)))
        await self.outbox.put(line)

    async def _refuse(self, error: ProtocolError) -> None:
        """A line too long or not a valid request is answered with why; the session goes on."""
        await self._send_error(error.request_id, error.code, error.message)

    async def _take(self, message: Message) -> None:
        if not isinstance(message, Request):
            await self._send_error(None, ErrorCode.MALFORMED, "the agent accepts requests only")
            return
        if not self.greeted:  # hello is answered before anything else is read
            await self._answer(message)
            return
        await self._slots.acquire()
        task = self.tasks.spawn(self._answer(message), f"request {message.method}")
        task.add_done_callback(lambda _: self._slots.release())

    async def _answer(self, request: Request[object]) -> None:
        if not self.greeted and request.method != HELLO.name:
            await self._send_error(request.id, ErrorCode.HELLO_REQUIRED, "send hello first")
            return
        handler = self.handlers.get(METHODS[request.method])
        if handler is None:
            message = f"this agent does not implement {request.method}"
            await self._send_error(request.id, ErrorCode.UNKNOWN_METHOD, message)
            return
        try:
            result = await self._run(request, handler)
        except AgentError as exc:
            self._audit(request, f"error: {exc.message}")
            await self._send_error(request.id, exc.code, exc.message)
            return
        except Exception as exc:
            code, message = _failure(request.method, exc)
            self._audit(request, f"error: {message}")
            await self._send_error(request.id, code, message)
            return
        if isinstance(request.params, HelloParams):
            self.greeted = True
            self.client = request.params.client_version
            self.pipeline = request.params.pipeline
        self._audit(request, "ok")
        await self._send_result(request.id, result)

    async def _run(self, request: Request[object], handler: Handler) -> object:
        """Bounds first; then mutating requests run once per idempotency key."""
        try:
            check_request(request)
        except LimitError as exc:
            raise AgentError(ErrorCode.INVALID_PARAMS, str(exc)) from None
        if not METHODS[request.method].mutating:
            return await handler(request)
        try:
            return await self.parts.idempotent.run(request, handler)
        except KeyReusedError as exc:
            raise AgentError(ErrorCode.KEY_REUSED, str(exc)) from None

    def _audit(self, request: Request[object], outcome: str) -> None:
        """Record a mutation; a full state folder loses the line, never the answer or the link."""
        if not METHODS[request.method].mutating:
            return
        try:
            self.parts.audit.record(
                self.client, request.method, request.params, request.idempotency_key, outcome
            )
        except OSError as exc:
            log.warning("audit line for %s (%s) lost: %s", request.method, outcome, exc)
            self.parts.state_health.failed(exc)
        else:
            self.parts.state_health.wrote(self.parts.audit.path)

    async def _send_error(self, request_id: int | None, code: str, message: str) -> None:
        await self.send(ErrorResponse(request_id, ErrorInfo(code, message)))


def _failure(method: str, exc: Exception) -> tuple[str, str]:
    """(code, message) for a request that raised.

    A failed write (a full disk) is `storage` and names the path; anything else is a bug, logged
    with its traceback.
    """
    if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        message = f"{method}: cannot write{where}: {exc.strerror}; free space there (or fix the disk) and retry"
        return ErrorCode.STORAGE, message
    log.error("request %s failed", method, exc_info=exc)
    return ErrorCode.INTERNAL, f"{method} failed inside the agent: {exc!r}; see agent.log"
