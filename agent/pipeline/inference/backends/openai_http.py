"""HTTP for the OpenAI-compatible backends: one JSON answer or one SSE stream, errors told apart.

Errors come as vLLM's `{"error": {message, type, param, code}}`, SGLang's flat
`{"object": "error", ...}` or a hosted API's `{"error": {code, message, metadata}}`; all three
are read by `client.error_message`, and 429/503 keep their Retry-After (openai-compat-wire.md
§1, §3, §4). A stream that fails after it began (HTTP 200 already sent) says so in an event,
`{"error": ...}` or `finish_reason: "error"` (vLLM serving.py:513-558; OpenRouter's docs): that is
an error to retry, never an answer. vLLM has no abort endpoint in production: closing the
connection aborts the request (entrypoints/serve/utils/api_utils.py:68-109). Which server
answers is told once per URL by the keys of its /server_info (`kind_of`,
agent/host/server_identity.py), never by a 200 alone: vLLM answers it in dev mode too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from agent.host.bounded_http import BodyTooLargeError, bounded_body, bounded_text, strict_json
from agent.host.server_identity import ServerKind, server_info_kind
from agent.host.sglang_auth import bearer_headers
from agent.pipeline.inference.client import (
    HEALTH_TIMEOUT_S,
    MAX_ANSWER_BYTES,
    AbortOutcome,
    Server,
    TransientError,
    bounded_json,
    error_message,
    failure_of,
)

OPENAI_KEY_ENV = "OPENAI_API_KEY"
MAX_INFO_BYTES = 1 << 20
"""/server_info: SGLang's server args, or vLLM's whole config in dev mode."""

YIELD_EVERY = 256
"""Stream events folded between two turns of the event loop."""


def server_root(base_url: str) -> str:
    """The server's own root: `base_url` without a trailing /v1."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def endpoint(base_url: str, path: str) -> str:
    """`base_url` + /v1/`path`, whether or not the base already ends in /v1."""
    base = base_url.rstrip("/")
    return f"{base}/{path}" if base.endswith("/v1") else f"{base}/v1/{path}"


class OpenAIClient:
    """POSTs to /v1 with the bearer key; health is `GET /v1/models`, which every such API has."""

    def __init__(self, session: aiohttp.ClientSession, timeout_s: float, api_key: str | None):
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.headers = bearer_headers(api_key)
        self._kinds: dict[str, ServerKind] = {}
        """Per server URL: what its /server_info says it is (kind_of)."""
        self._identifying = asyncio.Lock()

    async def post(
        self, server: Server, path: str, body: dict[str, Any], timeout_s: float | None = None
    ) -> dict[str, Any]:
        """One JSON answer; raises TransientError or RejectedError."""
        async with self._request(server, path, body, timeout_s) as response:
            answer = await _json(response)
        if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
            raise TransientError(f"answer has no choices: {str(answer)[:120]}")
        return answer

    async def stream(
        self, server: Server, path: str, body: dict[str, Any], timeout_s: float | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Each event of one SSE stream as it comes, up to [DONE]; an error event raises.

        Events are handed on one at a time, not kept: a hostile stream of 320,000 tiny events
        (15 MB, under the byte limit) would otherwise be held as as many dicts. The loop gets a
        turn every YIELD_EVERY events, since buffered lines are read without one.
        """
        async with self._request(server, path, body, timeout_s) as response:
            count = 0
            async for event in _events(response):
                _raise_on_error(event)
                yield event
                count += 1
                if count % YIELD_EVERY == 0:
                    await asyncio.sleep(0)

    @contextlib.asynccontextmanager
    async def _request(
        self, server: Server, path: str, body: dict[str, Any], timeout_s: float | None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """The answer to one POST; transport failures and error statuses raised as the runner's."""
        timeout = aiohttp.ClientTimeout(total=timeout_s) if timeout_s else self.timeout
        url = endpoint(server.url, path)
        try:
            async with self.session.post(
                url, json=body, headers=self.headers, timeout=timeout
            ) as response:
                if response.status >= 400:
                    raise await failure_of(response)
                yield response
        except (aiohttp.ClientConnectionError, ConnectionError) as exc:
            raise TransientError(f"cannot reach {url}: {exc}", server_down=True) from None
        except aiohttp.ClientPayloadError as exc:
            raise TransientError(f"the answer broke off: {exc}") from None
        except asyncio.TimeoutError:
            raise TransientError(f"no answer within {timeout.total:g} s") from None
        except aiohttp.ClientError as exc:  # an HTTP reply aiohttp could not read
            raise TransientError(f"the answer could not be read: {exc}") from None

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """Whether `GET /v1/models` answers (vLLM, SGLang and hosted APIs all serve it)."""
        url = endpoint(server.url, "models")
        try:
            async with self.session.get(
                url, headers=self.headers, timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
            ) as response:
                text = await bounded_text(response)
                if response.status in (200, 401, 403):  # up; a refused key shows on the
                    return True, "ready"  # first request, in words that name the key's variable
                return False, f"/v1/models answered HTTP {response.status}: {error_message(text)}"
        except (aiohttp.ClientError, ConnectionError, asyncio.TimeoutError) as exc:
            return False, str(exc) or type(exc).__name__

    async def kind_of(self, server: Server) -> ServerKind:
        """Which server this is, by its own /server_info keys (server_identity.py); asked once.

        `/get_server_info` is asked only after a 404, as sglang-router answers there alone (a
        real SGLang logs a warning on every call to it). A server that cannot be reached is
        down (TransientError), not a verdict either way.
        """
        async with self._identifying:  # one look per server, not one per prompt in flight
            if server.url not in self._kinds:
                status, body = await self._server_info(server, "server_info")
                if status == 404:
                    status, body = await self._server_info(server, "get_server_info")
                self._kinds[server.url] = server_info_kind(body) if status == 200 else "unknown"
        return self._kinds[server.url]

    async def _server_info(self, server: Server, path: str) -> tuple[int, Any]:
        url = f"{server_root(server.url)}/{path}"
        timeout = aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
        try:
            async with self.session.get(url, headers=self.headers, timeout=timeout) as response:
                if response.status != 200:
                    await bounded_text(response)
                    return response.status, None
                data = await bounded_body(response, MAX_INFO_BYTES)
        except BodyTooLargeError:
            return 200, None
        except (aiohttp.ClientError, ConnectionError, asyncio.TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise TransientError(f"cannot reach {url}: {reason}", server_down=True) from None
        try:
            return 200, strict_json(data)
        except (ValueError, RecursionError):
            return 200, None

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """No abort endpoint: the runner closes the connection, which aborts the request."""
        return AbortOutcome.UNSUPPORTED


async def _json(response: aiohttp.ClientResponse) -> Any:
    return await bounded_json(response)


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """The JSON events of an SSE body; a stream cut before [DONE] is an error."""
    received = 0
    async for raw in response.content:
        received += len(raw)
        if received > MAX_ANSWER_BYTES:
            raise TransientError(f"the stream passed the {MAX_ANSWER_BYTES:,}-byte limit")
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        try:
            event = strict_json(data.encode())
        except (ValueError, RecursionError):
            raise TransientError(f"a stream event is not JSON: {data[:120]}") from None
        if not isinstance(event, dict):  # no OpenAI-compatible server sends one
            raise TransientError(f"a stream event is {_json_kind(event)}, not an object")
        yield event
    raise TransientError("the stream ended before [DONE]")


def _json_kind(value: Any) -> str:
    kinds = {list: "a JSON list", str: "a JSON string", bool: "a JSON boolean"}
    return "null" if value is None else kinds.get(type(value), "a JSON number")


def _raise_on_error(event: dict[str, Any]) -> None:
    """An error inside a stream: an `error` object, or a choice finished with "error"."""
    error = event.get("error")
    choices = event.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise TransientError(f"a stream event's choices is {_json_kind(choices)}, not a list")
    finished = [c.get("finish_reason") for c in choices or () if isinstance(c, dict)]
    if error is None and "error" not in finished:
        return
    message = error_message(json.dumps(event)) if error is not None else "finish_reason error"
    raise TransientError(f"error inside the stream: {message}")
