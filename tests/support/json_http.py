"""HTTP to a server under test: a POST of JSON (its status and its JSON answer, whatever the
status), and whether it answers its /health."""

from __future__ import annotations

import urllib.request
from typing import Any

import aiohttp


async def post(
    http: aiohttp.ClientSession, url: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """The status and the decoded JSON of POSTing `body` to `url`."""
    async with http.post(url, json=body, headers=headers) as response:
        return response.status, await response.json(content_type=None)


def health_ok(url: str, timeout_s: float = 2.0) -> bool:
    """The server at `url` answers GET /health with 200 (blocking; False when it cannot)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout_s) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
