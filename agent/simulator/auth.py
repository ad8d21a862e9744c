"""`--api-key`: SGLang's bearer-token check, with its exempt paths and its 401 body.

Health, readiness and metrics stay open so probes and Prometheus need no secret; everything else
needs `Authorization: Bearer <key>` and otherwise gets HTTP 401 `{"error": "Unauthorized"}`
(srt/utils/auth.py:100-106, 108-117, 191-201).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:  # typedefs differ between aiohttp versions; only the checker needs them
    from aiohttp.typedefs import Handler, Middleware

OPEN_PREFIXES = ("/health", "/ready", "/metrics")
SIMULATOR_PREFIXES = ("/admin/",)
"""The simulator's own fault controls, which a real server does not have, stay open for tests."""


def api_key_middleware(api_key: str) -> Middleware:
    """An aiohttp middleware that refuses requests without the key, as SGLang does."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if request.method == "OPTIONS" or path.startswith(OPEN_PREFIXES + SIMULATOR_PREFIXES):
            return await handler(request)
        if not _bearer_matches(request.headers.get("Authorization"), api_key):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    return check


def _bearer_matches(header: str | None, expected: str) -> bool:
    scheme, _, token = (header or "").partition(" ")
    return scheme.lower() == "bearer" and bool(token) and secrets.compare_digest(token, expected)
