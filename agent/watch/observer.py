"""The daemon's one scanner: snapshots on its own schedule, whether or not a console watches.

Before it, each console's session took its own snapshots, so an agent nobody watched saw nothing
(no rates, no overrun, no alerts) and N consoles cost N scans. Now one task scans; consoles only
receive its latest encoded snapshot (each through its own coalescing outbox), and listeners such
as the history and the budget guard hear of every scan. It must never wait on a console.

Schedule: a scan at the fastest interval a console asked for (IDLE_INTERVAL_S when none
watches), at once on a job event or a new watcher, and soon after a dataset file grows (at most
every GROWTH_GAP_WATCHED_S while watched, every GROWTH_GAP_IDLE_S otherwise). While watched, the
files are looked at again GROWTH_GAP_WATCHED_S after they grew, and less often as they stay still
(down to every STILL_GAP_WATCHED_S): a dataset being written reaches the screen soon, and a
daemon at rest makes few looks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from agent.protocol import Event, Snapshot, WireMemo, encode

log = logging.getLogger(__name__)

IDLE_INTERVAL_S = 5.0
"""How often the agent looks when no console watches and no file grows: it keeps watch for the
user. Growth and job events are looked at sooner; this catches what only time changes (stalls)."""
GROWTH_GAP_WATCHED_S = 0.2
"""The least time between scans for growth while a console watches, and how soon files that grew
are looked at again. A response appended to a watched dataset is due on screen within 0.5 s
(bench_console's p95): this gap is most of that wait, and at 0.5 s it left nothing for the scan,
the wire and the render."""
STILL_GAP_WATCHED_S = 0.5
"""How often files that have stayed still are looked at while a console watches: the gap after a
look that saw no growth doubles from GROWTH_GAP_WATCHED_S up to this. Each look is a thread
hand-off; at rest they were most of the daemon's time."""
GROWTH_GAP_IDLE_S = 1.0
"""The same with nobody watching: history and guards need no finer than this."""

TakeSnapshot = Callable[[], Awaitable[Snapshot]]
FilesSignature = Callable[[], Hashable]
Deliver = Callable[[bytes], None]
Listener = Callable[[Snapshot], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Watcher:
    """A console's wish for snapshots: how often, where to put them, and since when."""

    interval_s: float
    deliver: Deliver
    joined_after_scan: int
    """How many scans had started when it joined."""


class Observer:
    """Takes every snapshot the daemon shows, and hands each to every watcher and listener."""

    def __init__(
        self, take: TakeSnapshot, signature: FilesSignature, changed: asyncio.Event,
        idle_interval_s: float = IDLE_INTERVAL_S,
    ) -> None:  # fmt: skip
        self._take = take
        self._signature = signature
        self._changed = changed
        self.idle_interval_s = idle_interval_s
        self._watchers: dict[object, Watcher] = {}
        self.listeners: list[Listener] = []
        """Called with every snapshot, in order; one that fails is logged and the scan goes on."""
        self.latest: bytes | None = None
        """The last snapshot, encoded as the `snapshot` event every watcher gets."""
        self.scans = 0
        self._memo = WireMemo()
        """The last snapshot's wire forms: an unchanged dataset is not converted again."""
        self._started = 0
        """Scans started so far: a watcher gets only scans started after it joined."""

    @property
    def watched(self) -> bool:
        """Whether any console watches now."""
        return bool(self._watchers)

    @property
    def interval_s(self) -> float:
        """The fastest interval any watcher asked for, or the idle interval."""
        return min(
            (watcher.interval_s for watcher in self._watchers.values()),
            default=self.idle_interval_s,
        )

    @contextlib.contextmanager
    def watching(self, interval_s: float, deliver: Deliver) -> Iterator[None]:
        """`deliver` gets every snapshot taken while the block runs; a fresh one is taken at once.

        A scan already running when it joins is not handed to it: what a watcher first sees
        was taken after it asked.
        """
        key = object()
        self._watchers[key] = Watcher(interval_s, deliver, self._started)
        self._changed.set()
        try:
            yield
        finally:
            del self._watchers[key]

    async def run(self) -> None:
        """Scan on schedule until cancelled; a failed scan is logged and retried on schedule."""
        signature: Hashable = None
        looked: Hashable = None
        taken_at = -math.inf
        look_gap_s = GROWTH_GAP_WATCHED_S
        while True:
            current = await asyncio.to_thread(self._signature)
            since = time.monotonic() - taken_at  # after the look: a wake a hair early still counts
            due = self._changed.is_set() or since >= self.interval_s
            if due or (current != signature and since >= self._growth_gap_s()):
                self._changed.clear()  # an event during the scan sets it again: one more scan
                signature, taken_at = current, time.monotonic()
                await self.scan()
            look_gap_s = next_look_gap_s(look_gap_s, grew=current != looked)
            looked = current
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), self._wait_s(taken_at, look_gap_s))

    def _growth_gap_s(self) -> float:
        gap = GROWTH_GAP_WATCHED_S if self._watchers else GROWTH_GAP_IDLE_S
        return min(gap, self.interval_s)

    def _wait_s(self, taken_at: float, look_gap_s: float) -> float:
        """Until the next look: the look gap, or less when the next scan is due sooner.

        With nobody watching, the look gap is the growth gap.
        """
        gap = look_gap_s if self._watchers else self._growth_gap_s()
        due_in = taken_at + self.interval_s - time.monotonic()
        return max(0.0, min(gap, due_in))

    async def scan(self) -> None:
        """Take one snapshot and hand it out."""
        self._started += 1
        number = self._started
        try:
            snapshot = await self._take()
        except Exception:
            log.exception("taking a snapshot failed; the next is due in %g s", self.interval_s)
            return
        try:
            data: bytes | None = await asyncio.to_thread(
                encode, Event("snapshot", snapshot), self._memo
            )
        except Exception:  # the consoles miss this one; the guard and the listeners do not
            log.exception("encoding a snapshot failed; the consoles get the next")
            data = None
        self.scans += 1  # once it is handed out: a count seen is a scan every watcher has
        if data is not None:
            self.latest = data
            for watcher in list(self._watchers.values()):
                if watcher.joined_after_scan < number:
                    watcher.deliver(data)
        for listener in list(self.listeners):
            await _heard(listener, snapshot)


def next_look_gap_s(gap_s: float, grew: bool) -> float:
    """The wait before the next look while watched: short after growth, longer as files stay still."""
    return GROWTH_GAP_WATCHED_S if grew else min(2 * gap_s, STILL_GAP_WATCHED_S)


async def _heard(listener: Listener, snapshot: Snapshot) -> Any:
    try:
        await listener(snapshot)
    except Exception:
        log.exception("a snapshot listener failed; it hears the next snapshot again")
