"""What the agent sends one console, in order and in bounded memory, so a slow one delays no one.

Each session writes through its own Outbox, drained by its own writer task: nothing that serves
one console ever waits for another console's socket. Responses wait for room (a console that
stops reading only stalls its own requests); events never wait: one that finds no room means the
console is far behind, and it is cut off (it reconnects and resumes from its offsets). Snapshots
take one slot of their own: a newer one replaces one not yet sent. Notices (a log follower cut
off) go through whatever the queue holds: there is at most one per followed log.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from agent.protocol import ByteWriter

log = logging.getLogger(__name__)

LIMIT_BYTES = 4 * 1024 * 1024
"""Bytes of responses and events queued for one console before it counts as not reading."""
LOW_WATER_BYTES = 256 * 1024
"""A log follower sends more only when the queue is this short."""


class Outbox:
    """One console's queue of outgoing lines, and the task that writes them."""

    def __init__(
        self, writer: ByteWriter, cut_off: Callable[[str], None], limit_bytes: int = LIMIT_BYTES
    ) -> None:
        self._writer = writer
        self._cut_off = cut_off
        self.limit_bytes = limit_bytes
        self._queue: collections.deque[bytes] = collections.deque()
        self.queued_bytes = 0
        self._snapshot: bytes | None = None
        self._pulse = asyncio.Event()
        """Set (and replaced) whenever anything changes: every waiter then checks again."""
        self.closed = False

    async def put(self, data: bytes) -> None:
        """Queue a response once there is room (an empty queue always has room)."""
        await self._until(
            lambda: self.closed or not self._queue or self.queued_bytes < self.limit_bytes
        )
        if not self.closed:
            self._append(data)

    def offer(self, data: bytes) -> bool:
        """Queue an event if there is room; without room the console is cut off (False)."""
        if self.closed:
            return False
        if self._queue and self.queued_bytes + len(data) > self.limit_bytes:
            self.close(f"its console stopped reading ({self.queued_bytes:,} bytes unsent)")
            return False
        self._append(data)
        return True

    def put_notice(self, data: bytes) -> None:
        """Queue a small notice whatever the queue holds (after what is already queued)."""
        if not self.closed:
            self._append(data)

    def put_snapshot(self, data: bytes) -> None:
        """Hold the latest snapshot; one not sent yet is replaced, never queued behind it."""
        if not self.closed:
            self._snapshot = data
            self._changed()

    @property
    def snapshot_pending(self) -> bool:
        """True while the last snapshot handed over has not been written."""
        return self._snapshot is not None

    async def wait_for_room(self, level_bytes: int, timeout_s: float) -> bool:
        """Wait until at most `level_bytes` are queued; False if that takes over `timeout_s`."""
        try:
            await asyncio.wait_for(
                self._until(lambda: self.closed or self.queued_bytes <= level_bytes), timeout_s
            )
        except asyncio.TimeoutError:
            return False
        return not self.closed

    async def run(self) -> None:
        """Write queued lines until closed; a write that fails closes the outbox."""
        try:
            while True:
                await self._until(
                    lambda: self.closed or bool(self._queue) or self._snapshot is not None
                )
                if self.closed:
                    return
                self._writer.write(self._take())
                await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            self.close(f"writing failed: {exc}")

    def close(self, reason: str) -> None:
        """Stop sending and cut the connection; anything still queued is dropped."""
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self.queued_bytes = 0
        self._snapshot = None
        log.info("console connection cut off: %s", reason)
        self._cut_off(reason)
        self._changed()

    def _take(self) -> bytes:
        if self._queue:
            data = self._queue.popleft()
            self.queued_bytes -= len(data)
        else:
            data, self._snapshot = self._snapshot or b"", None
        self._changed()
        return data

    def _append(self, data: bytes) -> None:
        self._queue.append(data)
        self.queued_bytes += len(data)
        self._changed()

    def _changed(self) -> None:
        pulse, self._pulse = self._pulse, asyncio.Event()
        pulse.set()

    async def _until(self, check: Callable[[], bool]) -> None:
        while not check():
            await self._pulse.wait()
