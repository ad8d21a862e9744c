"""One scanner for the daemon: consoles share its snapshots, and it scans with none attached."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from agent.protocol import SNAPSHOT_WATCH, Event, PipelineConfig, Snapshot, WatchParams
from agent.watch.observer import (
    GROWTH_GAP_WATCHED_S,
    STILL_GAP_WATCHED_S,
    Observer,
    next_look_gap_s,
)
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.waits import until


class CountingScans:
    """A stand-in for the daemon's snapshot: counts how often it is taken."""

    def __init__(self) -> None:
        self.taken = 0

    async def take(self) -> Snapshot:
        self.taken += 1
        return Snapshot(time.time(), "host", None, (), (), ())


async def test_every_watcher_gets_each_scan_and_watchers_cost_no_scans_of_their_own() -> None:
    scans = CountingScans()
    observer = Observer(scans.take, lambda: (), asyncio.Event(), idle_interval_s=60)
    received: list[list[bytes]] = [[] for _ in range(5)]
    with watching_all(observer, received, interval_s=0.05):
        running = asyncio.create_task(observer.run())
        await until(lambda: observer.scans >= 6, "six scans")
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    assert scans.taken <= observer.scans + 1  # at most one cut short by the cancel
    assert all(len(got) == observer.scans for got in received), [len(got) for got in received]
    assert all(got == received[0] for got in received)


async def test_with_no_watcher_the_observer_still_scans_and_tells_its_listeners() -> None:
    scans, heard = CountingScans(), list[Snapshot]()

    async def listen(snapshot: Snapshot) -> None:
        heard.append(snapshot)

    observer = Observer(scans.take, lambda: (), asyncio.Event(), idle_interval_s=0.05)
    observer.listeners.append(listen)
    running = asyncio.create_task(observer.run())
    await until(lambda: len(heard) >= 3, "three scans with nobody watching")
    running.cancel()
    assert observer.scans == scans.taken >= 3
    assert observer.latest is not None


async def test_a_job_event_or_a_new_watcher_is_scanned_at_once() -> None:
    scans, changed = CountingScans(), asyncio.Event()
    observer = Observer(scans.take, lambda: (), changed, idle_interval_s=3600)
    running = asyncio.create_task(observer.run())
    await until(lambda: scans.taken == 1, "the first scan")
    changed.set()
    await until(lambda: scans.taken == 2, "a scan on the job event")
    got: list[bytes] = []
    with observer.watching(3600, got.append):
        await until(lambda: len(got) == 1, "a scan for the new watcher")
    running.cancel()


def watching_all(
    observer: Observer, received: list[list[bytes]], interval_s: float
) -> contextlib.ExitStack:
    """Every list in `received` watching `observer` at once."""
    stack = contextlib.ExitStack()
    for got in received:
        stack.enter_context(observer.watching(interval_s, got.append))
    return stack


async def snapshots_of(link: AgentLink, seen: set[float]) -> None:
    while True:
        event: Event = await link.events.get()
        if isinstance(event.data, Snapshot):
            seen.add(event.data.taken_at)


async def test_consoles_of_one_daemon_receive_the_same_scans(state_dir: Path) -> None:
    links = [await open_local_link(state_dir, PipelineConfig()) for _ in range(3)]
    seen: list[set[float]] = [set() for _ in links]
    readers = [
        asyncio.create_task(snapshots_of(link, got)) for link, got in zip(links, seen, strict=True)
    ]
    try:
        for link in links:
            await link.call(SNAPSHOT_WATCH, WatchParams(interval_s=0.2))
        await until(lambda: bool(set.intersection(*seen)), "a snapshot every console received")
    finally:
        for reader in readers:
            reader.cancel()
        for link in links:
            await link.close()


async def test_a_new_watcher_gets_no_scan_that_began_before_it_asked() -> None:
    release, taken = asyncio.Event(), list[float]()

    async def slow_take() -> Snapshot:
        taken.append(float(len(taken) + 1))
        await release.wait()
        return Snapshot(taken[-1], "host", None, (), (), ())

    observer = Observer(slow_take, lambda: (), asyncio.Event(), idle_interval_s=3600)
    running = asyncio.create_task(observer.run())
    await until(lambda: len(taken) == 1, "the first scan under way")
    got: list[bytes] = []
    with observer.watching(3600, got.append):
        release.set()
        await until(lambda: len(got) == 1, "a snapshot for the watcher")
    running.cancel()
    assert b'"taken_at":2.0' in got[0], got[0]


def test_files_that_grew_are_looked_at_again_soon_and_still_ones_less_and_less_often() -> None:
    gaps = [STILL_GAP_WATCHED_S]
    for grew in (True, False, False, False, False, True):
        gaps.append(next_look_gap_s(gaps[-1], grew=grew))
    assert gaps[1] == GROWTH_GAP_WATCHED_S  # a dataset being written is looked at again soon
    assert gaps[1] < gaps[2] < gaps[3] == gaps[4] == gaps[5] == STILL_GAP_WATCHED_S
    assert gaps[6] == GROWTH_GAP_WATCHED_S


def test_the_growth_gap_leaves_room_for_a_scan_within_the_consoles_half_second() -> None:
    assert GROWTH_GAP_WATCHED_S <= 0.25 < STILL_GAP_WATCHED_S
