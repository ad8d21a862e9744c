"""Daemon at rest: CPU and resident memory over 60 s while it watches 8 datasets and 2 logs at 1 Hz.

Goals (issue: agent daemon): < 1 % of one core, < 60 MB resident.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import (
    LOGS_SUBSCRIBE,
    SNAPSHOT_WATCH,
    DatasetsConfig,
    LogSubscribeParams,
    PipelineConfig,
    WatchParams,
)
from agent.state import StatePaths, read_json
from console.link.local_link import open_local_link
from tests.support.runner_files import write_id_prompts

SECONDS = 60


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


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(measure(Path(folder)))
