"""The pipes of a process the console started (an attach, a loopback SSH session's command).

An asyncio subprocess's pipes close only once they are read to their end: its wait() returns
before that (Python 3.11), and pipes left open are the garbage collector's to warn of, in
whatever runs next. So whoever ends such a process reads what is left, with a bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

PIPES_END_S = 10.0
"""How long an ended process's pipes get to reach their end (a child of it may hold them)."""


async def to_end(stream: asyncio.StreamReader, keep: int = 0) -> bytes:
    """Read `stream` to its end, keeping at most its first `keep` bytes."""
    kept = bytearray()
    while chunk := await stream.read(64 * 1024):
        kept += chunk[: max(0, keep - len(kept))]
    return bytes(kept)


async def read_out(*readers: Awaitable[bytes]) -> None:
    """Wait, at most PIPES_END_S, for the readers of an ended process's pipes to reach their end.

    On a timeout (a child of the process holds them) the readers are cancelled, the pipes open.
    """
    try:
        await asyncio.wait_for(asyncio.gather(*readers), PIPES_END_S)
    except TimeoutError:
        return
    await asyncio.sleep(0)  # the pipes' connection_lost, queued behind their end of file
