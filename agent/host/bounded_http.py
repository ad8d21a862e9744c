"""Reading a peer's HTTP body with a bound, and its JSON strictly.

`response.json()` and `response.text()` read a whole body: an endless answer from a webhook took
the agent to 5-6 GB, an endless /metrics to 4 GB. Here a body is read a chunk at a time and
refused once past its limit; a text for a message or a probe is cut at its limit instead. JSON is
parsed strictly: a bare NaN or Infinity is not JSON, and no reader of our files accepts it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # aiohttp is where SGLang is; the agent itself runs without it
    import aiohttp

READ_CHUNK = 64 * 1024
"""A body is read this much at a time, so a limit is noticed within a chunk of passing it."""
MAX_TEXT_BYTES = 64 * 1024
"""Error messages, health and readiness answers: read this far, the rest ignored."""
MAX_CONTAINERS = 100_000
"""Lists and objects in one peer's JSON: an answer has a handful; each costs Python ~60 bytes."""


class BodyTooLargeError(ValueError):
    """The body passed its limit; nothing past it was read."""


async def bounded_body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body, or BodyTooLargeError once it passes `limit` bytes."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise BodyTooLargeError(f"the answer is {declared:,} bytes, over the {limit:,}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise BodyTooLargeError(f"the answer passed the {limit:,}-byte limit; not read further")
        chunks.append(chunk)
    return b"".join(chunks)


async def bounded_text(response: aiohttp.ClientResponse, limit: int = MAX_TEXT_BYTES) -> str:
    """The body's first `limit` bytes as text (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(READ_CHUNK):
        chunks.append(chunk[: limit - size])
        size += len(chunks[-1])
        if size >= limit:
            break
    data = b"".join(chunks)
    try:
        return data.decode(response.charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", "replace")


def strict_json(data: bytes | str, max_containers: int = MAX_CONTAINERS) -> Any:
    """json.loads, with NaN, Infinity and -Infinity refused as the ValueError they are.

    A body with more than `max_containers` lists and objects is refused before it is parsed
    (counted as its `[` and `{`, strings included, so never fewer than there are): 15 MB of `[]`
    inside an answer's meta_info, under every byte limit, became 2.6 million lists and took the
    runner to 851 MB and froze its loop for 8 s.
    """
    if isinstance(data, bytes):
        containers = data.count(b"[") + data.count(b"{")
    else:
        containers = data.count("[") + data.count("{")
    if containers > max_containers:
        raise ValueError(
            f"it holds {containers:,} lists and objects, over the limit of {max_containers:,}"
        )
    return json.loads(data, parse_constant=_not_json)


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")
