"""Talking to SGLang (or an sglang-router), and spreading requests over servers.

`/generate` failures are told apart as outages, retryable errors and refusals (whose message is
kept whole); the health check is /health for a server and /readiness for a router, whose own
/health answers 200 even with every worker dead; `/abort_request` says when it is not there.
The pool pauses dispatch to unhealthy servers until their health check answers again.
"""

from __future__ import annotations

import asyncio
import email.utils
import enum
import json
import logging
import random
import re
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from agent.datasets.response_lines import MAX_LINE_BYTES
from agent.host.bounded_http import BodyTooLargeError, bounded_body, bounded_text, strict_json
from agent.host.sglang_auth import bearer_headers

log = logging.getLogger("runner")

HEALTH_TIMEOUT_S = 10.0
HEALTH_POLL_S = 1.0
RECHECK_CAP_S = 8.0
"""Longest wait before re-checking a server that keeps coming back and failing again."""
FLAP_WINDOW_S = 10.0
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
ROUTER_HEALTH_PATH = "/readiness"
NO_WORKERS_CODE = "no_available_workers"
"""sglang-router's 503 when every worker is dead or its circuit open: an outage."""
MAX_ERROR_CHARS = 64 * 1024
RETRY_LATER = (408, 429)
"""4xx that mean "not now" (a timeout, a router's rate limit), retried like a 5xx."""
RETRY_AFTER_CAP_S = 120.0
"""The longest Retry-After honoured, as the openai client caps it (openai/_base_client.py:849-962)."""
PROBE_TIMEOUT_S = 30.0
PROBE_SAMPLING = {"max_new_tokens": 1, "temperature": 0.0}
"""What SGLang's /health generates to know it is alive (http_server.py:755-760)."""


class TransientError(Exception):
    """Worth retrying: connection refused or reset, HTTP 5xx, a timeout.

    `server_down` marks an outage (the server, or every worker behind a router, is gone): it is
    waited out and not counted against the prompt.
    """

    def __init__(
        self, message: str, *, server_down: bool = False, retry_after_s: float | None = None,
        rate_limited: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.server_down = server_down
        self.retry_after_s = retry_after_s
        """The server's Retry-After (429/503), honoured instead of the runner's own backoff."""
        self.rate_limited = rate_limited
        """HTTP 429: the API's rate limit, which pauses dispatch and fails no prompt."""


class RejectedError(Exception):
    """HTTP 4xx: the server refused the request, with its message kept whole."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.server_message = message


MAX_ANSWER_BYTES = MAX_LINE_BYTES
"""An answer that could not fit in one response line once written is refused while read."""


async def bounded_json(response: aiohttp.ClientResponse) -> Any:
    """The body as strict JSON (no NaN), at most MAX_ANSWER_BYTES; TransientError otherwise."""
    try:
        return strict_json(await bounded_body(response, MAX_ANSWER_BYTES))
    except BodyTooLargeError as exc:
        raise TransientError(str(exc)) from None
    except (ValueError, RecursionError) as exc:
        raise TransientError(f"answer is not JSON: {exc}") from None


def backoff_s(attempt: int, rng: random.Random) -> float:
    """Capped exponential backoff with full jitter."""
    return rng.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt))


@dataclass(eq=False)
class Server:
    """One SGLang endpoint (a server or an sglang-router) and what the runner knows of it."""

    url: str
    in_flight: int = 0
    healthy: bool = True
    health_path: str | None = None
    """/health for a server, /readiness for a router (its /health answers 200 regardless)."""
    failing_since: float | None = None
    """When requests to it began failing as an outage; cleared by the next success."""
    recovered_at: float = 0.0
    recheck_s: float = HEALTH_POLL_S
    """How long the watcher waits before its first look; doubles while the server flaps."""

    @property
    def is_router(self) -> bool:
        """Whether this endpoint turned out to be an sglang-router."""
        return self.health_path == ROUTER_HEALTH_PATH


class AbortOutcome(enum.Enum):
    """What became of one /abort_request."""

    SENT = "sent"
    UNSUPPORTED = "unsupported"
    """404/405: no /abort_request here (sglang-router has none)."""
    FAILED = "failed"


class SglangClient:
    """HTTP calls to SGLang's native API, with the API key on every one."""

    def __init__(
        self, session: aiohttp.ClientSession, request_timeout_s: float, api_key: str | None = None
    ) -> None:
        self.session = session
        self.request_timeout = aiohttp.ClientTimeout(total=request_timeout_s)
        self.headers = bearer_headers(api_key)

    async def generate(
        self, server: Server, payload: dict[str, Any], timeout_s: float | None = None
    ) -> dict[str, Any]:
        """One /generate call; raises TransientError or RejectedError."""
        timeout = aiohttp.ClientTimeout(total=timeout_s) if timeout_s else self.request_timeout
        try:
            async with self.session.post(
                f"{server.url}/generate", json=payload, timeout=timeout, headers=self.headers,
            ) as response:  # fmt: skip
                if response.status >= 400:
                    raise await failure_of(response)
                body = await bounded_json(response)
        except (aiohttp.ClientConnectionError, ConnectionError) as exc:
            raise TransientError(f"cannot reach {server.url}: {exc}", server_down=True) from None
        except aiohttp.ClientPayloadError as exc:
            raise TransientError(f"the answer broke off: {exc}") from None
        except asyncio.TimeoutError:
            raise TransientError(f"no answer within {timeout.total:g} s") from None
        except (aiohttp.ContentTypeError, ValueError) as exc:
            raise TransientError(f"answer is not JSON: {exc}") from None
        except aiohttp.ClientError as exc:  # an HTTP reply aiohttp could not read
            raise TransientError(f"the answer could not be read: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("output_ids"), list):
            raise TransientError(f"answer has no output_ids: {str(body)[:120]}")
        return body

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """Whether the server (or router) is ready for requests, and why not.

        A router's /readiness counts workers its health checks pass, but while their circuits
        are open it still refuses every request (503 no_available_workers), so for a router a
        one-token generation must pass too, as SGLang's own /health does for a server.
        """
        timeout = aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
        try:
            if server.health_path is None:
                server.health_path = await self._health_path(server, timeout)
            async with self.session.get(
                server.url + server.health_path, timeout=timeout, headers=self.headers
            ) as response:
                detail = _readiness_reason(await bounded_text(response)) if server.is_router else ""
                ready = response.status == 200
            if not ready or not server.is_router:
                return ready, f"{server.health_path} answered HTTP {response.status}{detail}"
            return await self._one_token(server)
        except (aiohttp.ClientError, ConnectionError, asyncio.TimeoutError) as exc:
            return False, str(exc) or type(exc).__name__

    async def _one_token(self, server: Server) -> tuple[bool, str]:
        """Whether a one-token generation goes through (the router's workers really serve)."""
        try:
            probe = {"input_ids": [0], "sampling_params": PROBE_SAMPLING}
            await self.generate(server, probe, PROBE_TIMEOUT_S)
        except (TransientError, RejectedError) as exc:
            return False, f"a one-token request failed: {exc}"
        return True, "ready"

    async def _health_path(self, server: Server, timeout: aiohttp.ClientTimeout) -> str:
        """/readiness when `server` is an sglang-router, else /health."""
        async with self.session.get(
            server.url + ROUTER_HEALTH_PATH, timeout=timeout, headers=self.headers
        ) as response:
            body = _json_or_none(await bounded_text(response))
        router = isinstance(body, dict) and ("healthy_workers" in body or "status" in body)
        if router:
            log.info(
                "%s is an sglang-router: its %s is the health check", server.url, ROUTER_HEALTH_PATH
            )
        return ROUTER_HEALTH_PATH if router else "/health"

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """Ask SGLang to stop generating `rid`; failures are noted, not raised (it may be gone)."""
        try:
            async with self.session.post(
                f"{server.url}/abort_request", json={"rid": rid}, headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S),
            ) as response:  # fmt: skip
                if response.status in (404, 405):
                    return AbortOutcome.UNSUPPORTED
                return AbortOutcome.SENT if response.status < 400 else AbortOutcome.FAILED
        except (aiohttp.ClientError, ConnectionError, asyncio.TimeoutError):
            log.info("abort of %s on %s did not go through", rid, server.url)
            return AbortOutcome.FAILED


async def failure_of(response: aiohttp.ClientResponse) -> Exception:
    """The exception an error answer stands for: an outage, a retryable error or a refusal."""
    text = await bounded_text(response)
    message = error_message(text) or response.reason or ""
    status = response.status
    if status == 503 and _error_code(text) == NO_WORKERS_CODE:
        return TransientError(f"HTTP 503: {message}", server_down=True)
    if status >= 500 or status in RETRY_LATER:
        retry_after = retry_after_s(response.headers.get("Retry-After"))
        return TransientError(
            f"HTTP {status}: {message}", retry_after_s=retry_after, rate_limited=status == 429
        )
    return RejectedError(message, status)


DELTA_SECONDS = re.compile(r"\d{1,12}(?:\.\d{1,6})?")
"""Retry-After's delta-seconds (RFC 9110 §10.2.3: digits; a fraction tolerated)."""


def retry_after_s(header: str | None) -> float | None:
    """Seconds a Retry-After header asks for (delta-seconds or an HTTP date), capped; None if absent."""
    if not header:
        return None
    if DELTA_SECONDS.fullmatch(header.strip()):  # not float(): "nan", "inf" and "1_0" are floats
        seconds = float(header)
    else:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


def error_message(text: str) -> str:
    """The message of an error body, whole, in any of SGLang's three shapes.

    `{"error": {"message": ...}}` (a ValueError, http_server.py:2246-2250), `{"error": "..."}`
    (the contract gate and the API-key check, http_server.py:937-939, utils/auth.py:191-201),
    `{"object": "error", "message": ...}` (body and HTTP errors, http_server.py:578-692); any
    other body is kept as it is.
    """
    body = _json_or_none(text)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(message := error.get("message"), str):
            return message
        if isinstance(error, str):
            return error
        if body.get("object") == "error" and isinstance(message := body.get("message"), str):
            return message
    return text.strip()[:MAX_ERROR_CHARS]


def _error_code(text: str) -> str | None:
    body = _json_or_none(text)
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _readiness_reason(text: str) -> str:
    body = _json_or_none(text)
    reason = body.get("reason") if isinstance(body, dict) else None
    return f": {reason}" if isinstance(reason, str) else ""


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
