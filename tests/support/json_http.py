"""A POST of JSON to a server under test: its status and its JSON answer, whatever the status."""

from __future__ import annotations

from typing import Any

import aiohttp


async def post(
    http: aiohttp.ClientSession, url: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """The status and the decoded JSON of POSTing `body` to `url`."""
    async with http.post(url, json=body, headers=headers) as response:
        return response.status, await response.json(content_type=None)
