"""Daemon at rest: CPU and resident memory over 60 s while it watches 8 datasets and 2 logs at 1 Hz.

Goals (issue: agent daemon): < 1 % of one core, < 60 MB resident. Then (issue: the agent keeps
watch) two loads of its one observer: 100 datasets watched by 1 console and then by 5, whose
scans and CPU must not grow with the consoles; and 5,000 dataset folders, the time a snapshot
takes, and pings answered within 100 ms while snapshots are taken.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from agent.attach import stop_daemon
from agent.protocol import (
    LOGS_SUBSCRIBE,
    PING,
    SNAPSHOT,
    SNAPSHOT_WATCH,
    DatasetsConfig,
    LogSubscribeParams,
    PingParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    WatchParams,
)
from agent.state import StatePaths, read_json
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.runner_files import write_id_prompts

SECONDS = 60
MANY_DATASETS = 100
CONSOLES = 5
CONSOLE_WINDOW_S = 20
FOLDERS = 5000
SNAPSHOTS_ALONE = 8
"""Later snapshots timed with nothing else asking: what a console waits for one."""
SNAPSHOTS_UNDER_PINGS = 5
"""Snapshots timed while a process pings as fast as answers come: on 2 cores it takes one."""
PING_GOAL_MS = 100.0
SNAPSHOT_TIMEOUT_S = 300.0
PINGER_START_S = 60.0
EventLike = Any
"""A multiprocessing Event (its type is private to multiprocessing)."""
QueueLike = Any


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(folder: Path) -> None:
    root = folder / "datasets"
    for index in range(8):
        write_id_prompts(root / f"B{index + 1}_set", 5000)
        (root / f"B{index + 1}_set" / "raw_responses.jsonl").write_text(
            '{"id":"p0","output_ids":[1]}\n' * 1
        )
    (folder / "sglang.log").write_text("[2026-11-29 10:00:00 TP0] Decode batch, #running-req: 1\n")
    config = PipelineConfig(
        datasets=DatasetsConfig(str(root), budget=10_000_000), sglang_log=str(folder / "sglang.log")
    )
    state = folder / "state"
    link = await open_local_link(state, config)
    try:
        await link.call(SNAPSHOT_WATCH, WatchParams(1.0))
        await link.call(LOGS_SUBSCRIBE, LogSubscribeParams("sglang", 0))
        await link.call(LOGS_SUBSCRIBE, LogSubscribeParams("agent", 0))
        pid = int(read_json(state / "daemon.json")["pid"])
        await asyncio.sleep(3)
        before, started = cpu_seconds(pid), time.monotonic()
        drained = 0
        while time.monotonic() - started < SECONDS:
            try:
                await asyncio.wait_for(link.events.get(), 1)
                drained += 1
            except TimeoutError:
                pass
        used = cpu_seconds(pid) - before
        elapsed = time.monotonic() - started
        print(
            f"daemon over {elapsed:.0f} s: {100 * used / elapsed:.2f} % of one core, "
            f"{resident_mb(pid):.0f} MB resident, {drained} events (goals: < 1 %, < 60 MB)"
        )
    finally:
        await link.close()
        stop_daemon(StatePaths(state))


def write_datasets(root: Path, count: int, prompts: int) -> None:
    """`count` dataset folders of `prompts` prompts and one response each."""
    for index in range(count):
        write_id_prompts(root / f"D{index:05d}_set", prompts)
        (root / f"D{index:05d}_set" / "raw_responses.jsonl").write_text(
            '{"id":"p0","output_ids":[1]}\n'
        )


async def watching(links: list[AgentLink], pid: int, seconds: float) -> tuple[int, float]:
    """(scans any console saw, % of one core) over `seconds`: a scan is one distinct `taken_at`.

    Snapshots queued on a link before the window (the scans each new watcher asks for, among
    them) are drained but not counted: same machine, so the agent's clock is this one.
    """
    taken: set[float] = set()
    since = time.time()

    async def drain(link: AgentLink) -> None:
        while True:
            event = await link.events.get()
            if isinstance(event.data, Snapshot) and event.data.taken_at >= since:
                taken.add(event.data.taken_at)

    before, started = cpu_seconds(pid), time.monotonic()
    drains = [asyncio.create_task(drain(link)) for link in links]
    await asyncio.sleep(seconds)
    for task in drains:
        task.cancel()
    await asyncio.gather(*drains, return_exceptions=True)
    return len(taken), 100 * (cpu_seconds(pid) - before) / (time.monotonic() - started)


async def measure_consoles(folder: Path) -> None:
    """100 datasets, watched at 1 Hz by one console and then by five."""
    root = folder / "datasets"
    write_datasets(root, MANY_DATASETS, 200)
    config = PipelineConfig(datasets=DatasetsConfig(str(root), budget=10_000_000))
    state = folder / "state"
    links = [await open_local_link(state, config)]
    try:
        pid = int(read_json(state / "daemon.json")["pid"])
        await links[0].call(SNAPSHOT_WATCH, WatchParams(1.0))
        await asyncio.sleep(3)
        scans_one, cpu_one = await watching(links, pid, CONSOLE_WINDOW_S)
        for _ in range(CONSOLES - 1):
            links.append(await open_local_link(state, config))
            await links[-1].call(SNAPSHOT_WATCH, WatchParams(1.0))
        await asyncio.sleep(3)
        scans_all, cpu_all = await watching(links, pid, CONSOLE_WINDOW_S)
        print(
            f"{MANY_DATASETS} datasets over {CONSOLE_WINDOW_S} s: 1 console {scans_one} scans, "
            f"{cpu_one:.2f} % of one core; {CONSOLES} consoles {scans_all} scans, {cpu_all:.2f} % "
            "(goal: neither grows with the consoles)"
        )
    finally:
        for link in links:
            await link.close()
        stop_daemon(StatePaths(state))


def ping_process(
    state: Path, config: PipelineConfig, ready: EventLike, stop: EventLike, out: QueueLike
) -> None:
    """Ping the agent on a link of its own, one ping after another, until `stop`; put the ms.

    A process of its own: in the measuring process, decoding a 5,000-dataset snapshot (one
    json.loads holds the GIL throughout) held up the pings' replies and counted against the agent.
    """
    out.put(asyncio.run(ping_until(state, config, ready, stop)))


async def ping_until(
    state: Path, config: PipelineConfig, ready: EventLike, stop: EventLike
) -> list[float]:
    link = await open_local_link(state, config)
    times = []
    try:
        ready.set()
        while not stop.is_set():
            started = time.monotonic()
            await link.call(PING, PingParams())
            times.append(1000 * (time.monotonic() - started))
    finally:
        await link.close()
    return times


async def pings_during(
    work: Callable[[], Awaitable[list[float]]], state: Path, config: PipelineConfig
) -> tuple[list[float], list[float]]:
    """`work`'s result, and the round trips (ms) of pings another process sent while it ran."""
    context = multiprocessing.get_context("spawn")
    ready, stop, out = context.Event(), context.Event(), context.Queue()
    pinger = context.Process(target=ping_process, args=(state, config, ready, stop, out))
    pinger.start()
    try:
        if not await asyncio.to_thread(ready.wait, PINGER_START_S):
            raise RuntimeError(f"the pinging process did not start within {PINGER_START_S:g} s")
        result = await work()
    finally:
        stop.set()
    pings: list[float] = await asyncio.to_thread(out.get, True, PINGER_START_S)
    await asyncio.to_thread(pinger.join)
    return result, pings


async def snapshots(link: AgentLink, count: int) -> list[float]:
    """Seconds each of `count` snapshots in a row takes."""
    took = []
    for _ in range(count):
        started = time.monotonic()
        await link.call(SNAPSHOT, SnapshotParams(), timeout_s=SNAPSHOT_TIMEOUT_S)
        took.append(time.monotonic() - started)
    return took


def spread(seconds: list[float]) -> str:
    """ "median (min-max)" of some timings in seconds."""
    return f"{statistics.median(seconds):.2f} ({min(seconds):.2f}-{max(seconds):.2f})"


async def measure_folders(folder: Path) -> None:
    """5,000 dataset folders: the first and later snapshots, and pings while they are taken."""
    root = folder / "datasets"
    write_datasets(root, FOLDERS, 5)
    config = PipelineConfig(datasets=DatasetsConfig(str(root), budget=10_000_000))
    state = folder / "state"
    link = await open_local_link(state, config)
    try:
        first, second, *alone = await snapshots(link, 2 + SNAPSHOTS_ALONE)
        flooded, pings = await pings_during(
            lambda: snapshots(link, SNAPSHOTS_UNDER_PINGS), state, config
        )
        slowest, median = (max(pings), statistics.median(pings)) if pings else (0.0, 0.0)
        print(
            f"{FOLDERS:,} dataset folders: first snapshot {first:.2f} s, second {second:.2f} s "
            "(each folder read once more: its rates need two points); later ones "
            f"{spread(alone)} s (goal < 1 s); while another process pings back to back, "
            f"snapshots {spread(flooded)} s and {len(pings)} pings, slowest {slowest:.1f} ms, "
            f"median {median:.1f} ms (goal: every ping < {PING_GOAL_MS:.0f} ms)"
        )
    finally:
        await link.close()
        stop_daemon(StatePaths(state))


PARTS: dict[str, Callable[[Path], Coroutine[Any, Any, None]]] = {
    "idle": measure, "consoles": measure_consoles, "folders": measure_folders,
}  # fmt: skip
"""Each part by name: `BENCH_DAEMON_PARTS=folders` runs only the 5,000-folder one."""


def chosen_parts() -> list[Callable[[Path], Coroutine[Any, Any, None]]]:
    """The parts BENCH_DAEMON_PARTS names (comma-separated), or all of them when it is unset."""
    names = [name for name in os.environ.get("BENCH_DAEMON_PARTS", "").split(",") if name]
    unknown = [name for name in names if name not in PARTS]
    if unknown:
        raise SystemExit(
            f"BENCH_DAEMON_PARTS: no part named {unknown[0]!r}; choose from {', '.join(PARTS)}"
        )
    return [PARTS[name] for name in names] if names else list(PARTS.values())


def run() -> None:
    for measurement in chosen_parts():
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(measurement(Path(folder)))
