"""The daemon leaves when its state folder goes: deleted, or replaced by another.

A daemon whose folder was removed (`rm -rf ~/.eagle-agent`) or swapped for a new one keeps no
socket anyone can reach and would run on unseen, holding its history open; it exits by itself
within a minute instead, leaving its jobs running (a new daemon adopts them). It must then not
clean up after itself in the folder now at that path: those files are another daemon's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass

from agent.state import StatePaths

log = logging.getLogger(__name__)

CHECK_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class FolderIdentity:
    """Which state folder (and which lock file in it) the daemon started in."""

    folder: tuple[int, int]
    lock: tuple[int, int]


def identity_of(paths: StatePaths) -> FolderIdentity | None:
    """The (device, inode) of the state folder and its lock file now; None when either is gone."""
    try:
        folder, lock = os.stat(paths.root), os.stat(paths.daemon_lock)
    except OSError:
        return None
    return FolderIdentity((folder.st_dev, folder.st_ino), (lock.st_dev, lock.st_ino))


async def leave_when_gone(
    paths: StatePaths, started_in: FolderIdentity, stop: asyncio.Event,
    every_s: float = CHECK_EVERY_S,
) -> None:  # fmt: skip
    """Set `stop` once the state folder is not the one the daemon started in."""
    while True:
        await asyncio.sleep(every_s)
        now = await asyncio.to_thread(identity_of, paths)
        if now != started_in:
            what = "deleted" if now is None else "replaced"
            log.warning(
                "state folder %s was %s: the agent stops (jobs keep running)", paths.root, what
            )
            stop.set()
            return
