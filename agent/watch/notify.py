"""Alerts and guard actions POSTed to a webhook, so a run that goes wrong at night reaches someone.

The notifier listens to the observer's snapshots and queues each alert raised since the last
one at or above the configured severity; a sender task of its own POSTs them one by one (stdlib
http.client in a thread, bounded in time and size, retries with backoff). Nothing here ever makes the scanner wait:
queuing is a deque append, a full queue or a burst past the rate limit drops the notification
and counts it as a dead letter, as does one that failed every try. The URL may hold a secret
(ntfy topics, Slack hooks): logs and alerts name only its scheme and host.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http.client
import json
import logging
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from agent.protocol import Alert, NotifyStatus, PipelineConfig, Severity, Snapshot
from agent.tasks import TaskOwner

log = logging.getLogger(__name__)

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
LEVELS: dict[str, Severity] = {"info": "info", "warning": "warning", "error": "error"}
TIMEOUT_S = 5.0
"""Each socket operation of a POST."""
POST_DEADLINE_S = 15.0
"""A whole POST, answer included: past it the connection is closed and the try has failed."""
ANSWER_READ_BYTES = 4096
"""Of a hook's answer only the status matters; this much of the body is read, the rest not."""
TRIES = 3
BACKOFF_S = 1.0
"""The wait before the second try; doubled before each further one."""
QUEUE_LIMIT = 100
RATE_PER_MINUTE = 30
"""At most this many notifications start per minute; more are dead letters (a storm says enough)."""

Post = Callable[[str, bytes, float], None]


class WebhookPoster:
    """POSTs with the stdlib, bounded in time and size, and abortable from another thread.

    urllib's timeout is per socket operation, so a hook that drips a byte every 2 s held the
    sender for good, and a blocked thread kept the agent from stopping; its answer was read
    whole (an endless 200 took the agent to 5-6 GB), and redirects were followed as a GET and
    counted as sent. Here the connection is ours from its TCP connect on: `abort` shuts it
    down from the event loop's thread, which ends a blocked read at once, in a TLS handshake
    too (a hook that dripped its handshake held the agent's exit 5 s); at most
    ANSWER_READ_BYTES of an answer are read; a 3xx is a failure; only http and https are spoken.
    """

    def __init__(self) -> None:
        self._live: set[socket.socket] = set()
        self._lock = threading.Lock()

    def __call__(self, url: str, body: bytes, timeout_s: float) -> None:
        """POST `body` as JSON; raises OSError or ValueError on any failure. Blocking."""
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        if parts.scheme not in ("http", "https") or not host:
            raise ValueError(f"a webhook URL must be http or https, not {parts.scheme or '?'}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        tcp = socket.create_connection((host, port), timeout_s)
        handle = tcp.dup()  # TLS takes `tcp` over; the dup still reaches the connection to abort
        with self._lock:
            self._live.add(handle)
        try:
            _exchange(_connection(parts, host, tcp, timeout_s), parts, body)
        finally:
            with self._lock:
                self._live.discard(handle)
            handle.close()

    def abort(self) -> None:
        """Close every POST under way: a read blocked on it ends with an OSError."""
        with self._lock:
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _connection(
    parts: urllib.parse.SplitResult, host: str, tcp: socket.socket, timeout_s: float
) -> http.client.HTTPConnection:
    """A connection over `tcp` to `host`, TLS-wrapped for https (the handshake is abortable too)."""
    if parts.scheme == "http":
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout_s)
        connection.sock = tcp
        return connection
    connection = http.client.HTTPSConnection(host, parts.port, timeout=timeout_s)
    try:
        # ssl leaves the socket it made unclosed when the connection is gone before it wraps
        # (its not-connected path raises past its own cleanup): fail here first, closing ours
        tcp.getpeername()
        connection.sock = ssl.create_default_context().wrap_socket(tcp, server_hostname=host)
    except BaseException:
        tcp.close()
        raise
    return connection


def _exchange(
    connection: http.client.HTTPConnection, parts: urllib.parse.SplitResult, body: bytes
) -> None:
    """Send the POST and read its status and at most ANSWER_READ_BYTES of its answer."""
    try:
        path = parts.path or "/"
        connection.request("POST", f"{path}?{parts.query}" if parts.query else path, body,
                           {"Content-Type": "application/json"})  # fmt: skip
        answer = connection.getresponse()
        answer.read(ANSWER_READ_BYTES)
        if not 200 <= answer.status < 300:
            raise WebhookRefusedError(answer.status)
    finally:
        connection.close()


class WebhookDeadlineError(OSError):
    """The whole POST took longer than POST_DEADLINE_S; it was aborted."""


class WebhookRefusedError(OSError):
    """The hook answered, but not 2xx (a redirect is not followed: it is not delivery)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def redacted(url: str) -> str:
    """Scheme and host only: a webhook's path or query is often its secret."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}/…"


def payload(alert: Alert, host: str) -> dict[str, Any]:
    """What a webhook receives; `text` is for hooks that show one field as it is."""
    return {
        "host": host, "dataset": alert.subject, "kind": alert.kind, "severity": alert.severity,
        "message": alert.message, "ts": alert.raised_at or time.time(),
        "text": f"[{host}] {alert.severity}: {alert.message}",
    }  # fmt: skip


class Notifier:
    """Queues new alerts for the webhook and sends them from a task of its own."""

    def __init__(
        self, pipeline: Callable[[], PipelineConfig], tasks: TaskOwner, post: Post | None = None
    ) -> None:
        self._pipeline = pipeline
        self._tasks = tasks
        self._post: Post = post if post is not None else WebhookPoster()
        self._queue: collections.deque[bytes] = collections.deque()
        """Alert bodies to send, each to the hook configured when it is tried."""
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._raised: set[tuple[str, str]] = set()
        self._started: collections.deque[float] = collections.deque()
        self.sent = 0
        self.dead_letters = 0
        """Notifications dropped: queue full, rate limit, or every try failed."""
        self.last_failure: tuple[str, float] | None = None
        """Why the last notification was lost, and when: never the URL."""

    async def heard(self, snapshot: Snapshot) -> None:
        """Queue the alerts raised since the last snapshot (an observer listener; never waits)."""
        config = self._pipeline().notify
        now = {(a.kind, a.subject): a for a in snapshot.alerts}
        new = [alert for key, alert in now.items() if key not in self._raised]
        self._raised = set(now)
        if config is None:
            return
        floor = SEVERITY_RANK[config.min_severity]
        for alert in new:
            if SEVERITY_RANK.get(alert.severity, 0) >= floor:
                self._enqueue(json.dumps(payload(alert, snapshot.host_name)).encode())

    def notice(self, kind: str, subject: str, severity: str, message: str) -> None:
        """Queue one event of the box's own (a restart, an autopilot stage) if severe enough."""
        config = self._pipeline().notify
        if config is None or SEVERITY_RANK.get(severity, 0) < SEVERITY_RANK[config.min_severity]:
            return
        alert = Alert(kind, LEVELS.get(severity, "info"), message, subject, time.time())
        self._enqueue(json.dumps(payload(alert, socket.gethostname())).encode())

    def alerts(self, now: float) -> list[Alert]:
        """A warning while notifications are being lost, so the dashboard says so."""
        config = self._pipeline().notify
        if config is None or not self.dead_letters:
            return []
        message = (
            f"webhook {redacted(config.url)}: {self.dead_letters} notification(s) could not be "
            "delivered (unreachable, failing, or over the rate limit); see agent.log"
        )
        return [Alert("notify_failing", "warning", message, "notify", now)]

    def status(self) -> NotifyStatus:
        """What `doctor` shows: the webhook's site, what went out, what was lost and why."""
        config = self._pipeline().notify
        failure, failed_at = self.last_failure or (None, None)
        site = redacted(config.url) if config is not None else None
        return NotifyStatus(
            site, self.sent, self.dead_letters, failure, failed_at, pending=len(self._queue)
        )

    def _lost(self, reason: str) -> None:
        self.dead_letters += 1
        self.last_failure = (reason, time.time())

    def _enqueue(self, body: bytes) -> None:
        if len(self._queue) >= QUEUE_LIMIT:
            self._lost("queue full")
            return
        self._queue.append(body)
        self._wake.set()
        if self._sender is None or self._sender.done():
            self._sender = self._tasks.spawn(self._send_all(), "webhook sender")

    async def _send_all(self) -> None:
        while True:
            while self._queue:
                body = self._queue[0]  # still pending (status) until its tries are over
                try:
                    await self._send_one(body)
                finally:
                    self._queue.popleft()
            self._wake.clear()
            await self._wake.wait()

    def _over_rate(self) -> bool:
        now = time.monotonic()
        while self._started and now - self._started[0] > 60:
            self._started.popleft()
        if len(self._started) >= RATE_PER_MINUTE:
            return True
        self._started.append(now)
        return False

    async def _send_one(self, body: bytes) -> None:
        if self._pipeline().notify is None:  # the webhook was taken out of the config
            return
        if self._over_rate():
            self._lost("over the rate limit")
            return
        await self._send(body)

    async def _send(self, body: bytes) -> None:
        reason = "not sent"
        for attempt in range(TRIES):
            config = self._pipeline().notify  # each try to the hook configured then
            if config is None:  # taken out of the config between tries: nobody to tell
                return
            try:
                await self._post_within_deadline(config.url, body)
            except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
                reason = _reason(exc)
                log.warning(
                    "webhook %s: try %d of %d failed: %s", redacted(config.url), attempt + 1,
                    TRIES, reason,
                )  # fmt: skip
                if attempt + 1 < TRIES:
                    await asyncio.sleep(BACKOFF_S * 2**attempt)
                continue
            self.sent += 1
            return
        self._lost(reason)

    async def _post_within_deadline(self, url: str, body: bytes) -> None:
        """One POST in a thread; past POST_DEADLINE_S, or when the agent stops, it is aborted."""
        posting = asyncio.ensure_future(asyncio.to_thread(self._post, url, body, TIMEOUT_S))
        try:
            await asyncio.wait_for(asyncio.shield(posting), POST_DEADLINE_S)
        except TimeoutError:
            self._abort_leaving(posting)
            raise WebhookDeadlineError(f"no answer within {POST_DEADLINE_S:g} s") from None
        except asyncio.CancelledError:  # the agent stops: its thread must not hold it up
            self._abort_leaving(posting)
            raise

    def _abort_leaving(self, posting: asyncio.Future[None]) -> None:
        """Abort the POST; its thread ends on its own, with an error nobody needs to hear."""
        self._abort()
        posting.add_done_callback(lambda ended: ended.cancelled() or ended.exception())

    def _abort(self) -> None:
        abort = getattr(self._post, "abort", None)
        if callable(abort):
            abort()


def _reason(exc: Exception) -> str:
    """Why a POST failed, without the URL (urllib puts it in some messages)."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, WebhookRefusedError):
        return f"HTTP {exc.status}"
    if isinstance(exc, WebhookDeadlineError):
        return str(exc)
    if isinstance(exc, ValueError):
        return str(exc)
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return type(exc).__name__
