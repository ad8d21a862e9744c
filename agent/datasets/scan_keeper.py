"""Which followed files a tracker keeps, when, and how a new follower takes up what was kept.

A restarted agent (or a new tracker for a new config) would read every followed file from byte 0;
with its scans kept it reads only what was appended since. The store does the keeping on a thread
of its own; this decides what to hand it and when: a file's scan once it moved since it was last
kept, at most every SAVE_EVERY_S (longer for a file with many ids, so that keeping costs about the
same share of a core whatever the size), and every moved one at the daemon's stop. The saved
record is never trusted over the file: `kept_scan.restore` checks it first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from agent.datasets.kept_scan import KeptScan, capture, restore
from agent.datasets.line_follower import LineFollower

log = logging.getLogger(__name__)

SAVE_EVERY_S = 5.0
IDS_PER_PERIOD = 100_000
"""A file with more ids than this is kept less often, in proportion (about 20 ms of work each)."""
KEEP_FROM_BYTES = 256 * 1024
"""A file read less far than this is not kept: reading it again costs less than a record."""


class KeptStore(Protocol):
    """Where kept scans are read from and handed to (`agent.watch.scan_store.ScanStore`)."""

    def load(self, path: str) -> KeptScan | None:
        """The newest record kept for the followed file `path`, owned by the caller."""
        ...

    def save(self, kept: KeptScan) -> None:
        """Keep `kept`, without waiting."""
        ...


@dataclass(frozen=True, slots=True)
class _Kept:
    position: tuple[int, int | None]
    """(offset, inode) the file was kept at."""
    due_at: float | None
    """Monotonic time before which it is not kept again; None: at the next move."""


class ScanKeeper:
    """One tracker's link to the kept scans: takes them up, and hands over the moved ones."""

    def __init__(self, store: KeptStore, keep_from_bytes: int = KEEP_FROM_BYTES) -> None:
        self.store = store
        self.keep_from_bytes = keep_from_bytes
        self._kept: dict[str, _Kept] = {}
        self._failed = False
        """A bug met in keeping was logged (once, not every scan)."""

    def take_up(self, follower: LineFollower) -> None:
        """Start a follower that has read nothing where its file's kept scan left off.

        Only if the file still matches the record; else it reads from byte 0 as it would have.
        """
        try:
            kept = self.store.load(str(follower.path))
            why = None if kept is None else restore(follower, kept)
        except Exception:  # a bug here must cost a rescan, never the snapshot
            log.exception("taking up the kept scan of %s failed; it is read from byte 0",
                          follower.path)  # fmt: skip
            follower.offset, follower.inode = 0, None
            follower.reset()
            return
        if why is not None:
            log.info("%s is read from byte 0: %s", follower.path, why)
        elif kept is not None:
            self._kept[kept.path] = _Kept((kept.offset, kept.ino), None)

    def noticed(self, followers: Iterable[LineFollower], monotonic: float) -> None:
        """Hand over the scan of each follower that moved since it was kept, when it is due."""
        for follower in followers:
            last = self._kept.get(str(follower.path))
            if last is None or last.due_at is None or monotonic >= last.due_at:
                self._guarded(follower, last, monotonic)

    def keep_all(self, followers: Iterable[LineFollower], monotonic: float) -> None:
        """Hand over the scan of every follower that moved since it was kept (at the stop)."""
        for follower in followers:
            self._guarded(follower, self._kept.get(str(follower.path)), monotonic)

    def _guarded(self, follower: LineFollower, last: _Kept | None, monotonic: float) -> None:
        try:
            self._keep(follower, last, monotonic)
        except Exception:  # a bug here must cost the keeping, never the snapshot
            if not self._failed:
                log.exception("keeping the scan of %s failed", follower.path)
            self._failed = True

    def _keep(self, follower: LineFollower, last: _Kept | None, monotonic: float) -> None:
        position = (follower.offset, follower.inode)
        if follower.offset < self.keep_from_bytes or (last and last.position == position):
            return
        kept = capture(follower)
        if kept is None:
            return
        self.store.save(kept)
        period_s = SAVE_EVERY_S * max(1.0, len(kept.ids) / IDS_PER_PERIOD)
        self._kept[kept.path] = _Kept(position, monotonic + period_s)
