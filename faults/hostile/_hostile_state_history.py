"""The history cases of the hostile-state scenario: a lock held by another process, and bad files.

Each case starts a real daemon on a state folder whose `history.sqlite3` is in one odd state,
and measures what a console sees: how long snapshots take, whether `events.list` and
`datasets.detail` are answered (and with which error), which alerts are raised, and whether the
daemon logged a traceback. The guard case runs a real runner against the simulator with a
300-token budget and `guard = "stop"`, with and without the lock, and reports the overrun.

Nothing here decides what passes: `hostile_state` checks the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from agent.protocol import (
    DATASETS_DETAIL,
    EVENTS_LIST,
    SNAPSHOT,
    DatasetsConfig,
    DetailParams,
    EventsParams,
    JobSpec,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from agent.watch.history import FILE_NAME
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from faults.harness.agents import daemon_pid, local_agent, log_tracebacks, shut_down_agent
from faults.harness.memory import resident_mb
from tests.support.operations import local_link
from tests.support.runner_files import response_tokens, start_runner, write_id_prompts
from tests.support.simulator_process import running_simulator
from tests.support.sqlite_lock import locked_by_another_process

T = TypeVar("T")
BUDGET = 300
MEAN_TOKENS = 20
CONCURRENCY = 2
REQUEST_TOKENS_PER_S = 80
TOKENS_PER_S = CONCURRENCY * REQUEST_TOKENS_PER_S
"""How fast the runner writes: the overrun is this times how late the guard acts."""
GUARD_WAIT_S = 60.0


@dataclass(slots=True)
class Seen:
    """What a console saw of one daemon."""

    snapshot_s: list[float] = field(default_factory=list)
    first_snapshot_s: float = 0.0
    answers: dict[str, str] = field(default_factory=dict)
    """events.list and datasets.detail: "ok" or the error code."""
    alerts: set[str] = field(default_factory=set)
    tracebacks: int = 0
    rss_mb: float = 0.0
    stop_s: float = 0.0
    wal_peak_bytes: int = 0
    """The history's write-ahead log at its largest, sampled at each snapshot."""


def dataset_root(workdir: Path) -> Path:
    """One dataset, B1, with ten prompts and one response."""
    root = workdir / "datasets"
    write_id_prompts(root / "B1", 10)
    return root


async def watch(state_dir: Path, root: Path, looks: int, python: str | None = None) -> Seen:
    """Start a daemon on `state_dir`, take `looks` snapshots and ask for detail and events."""
    seen = Seen()
    started = time.monotonic()
    config = PipelineConfig(datasets=DatasetsConfig(str(root)))
    async with local_link(state_dir, config, python or sys.executable) as link:
        for number in range(looks):
            before = time.monotonic()
            taken: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
            seen.snapshot_s.append(time.monotonic() - before)
            seen.wal_peak_bytes = max(seen.wal_peak_bytes, wal_bytes(state_dir))
            if number == 0:
                seen.first_snapshot_s = time.monotonic() - started
            seen.alerts |= {a.kind for a in taken.alerts}
        seen.answers["events.list"] = await _answer(link.call(EVENTS_LIST, EventsParams()))
        seen.answers["datasets.detail"] = await _answer(
            link.call(DATASETS_DETAIL, DetailParams("B1"))
        )
        seen.rss_mb = resident_mb(daemon_pid(state_dir))
    seen.tracebacks = len(log_tracebacks(state_dir))
    before = time.monotonic()
    await shut_down_agent(state_dir)
    seen.stop_s = time.monotonic() - before
    return seen


async def _answer(call: Awaitable[T]) -> str:
    try:
        await call
    except AgentRequestError as exc:
        return exc.code
    except LinkError as exc:
        return f"link: {exc}"
    return "ok"


FILL = """
import os, sqlite3, sys, time
rows, leave_log = int(sys.argv[2]), sys.argv[3] == "1"
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA wal_autocheckpoint=0")
db.execute("CREATE TABLE points (dataset TEXT NOT NULL, ts REAL NOT NULL, "
           "tokens INTEGER NOT NULL, responses INTEGER NOT NULL)")
db.execute("CREATE INDEX points_by_dataset ON points (dataset, ts)")
now = time.time()
with db:
    db.executemany("INSERT INTO points VALUES (?,?,?,?)",
                   ((f"B{n % 7}", now - rows + n, n, n) for n in range(rows)))
if leave_log:
    os._exit(0)  # as a killed agent would: the write-ahead log is left for the next to recover
db.close()
"""


def fill_history(path: Path, rows: int, leave_log: bool = False) -> None:
    """A history as an old agent left it: `rows` points of seven datasets, a second apart.

    With `leave_log`, the writer dies before any checkpoint: all of it is in the WAL.
    """
    subprocess.run(
        [sys.executable, "-c", FILL, str(path), str(rows), "1" if leave_log else "0"],
        check=True, timeout=600,
    )  # fmt: skip


def wal_bytes(state_dir: Path) -> int:
    """The size of the history's write-ahead log now (0 when there is none)."""
    wal = state_dir / f"{FILE_NAME}-wal"
    return wal.stat().st_size if wal.exists() else 0


async def guard_overrun(workdir: Path, locked: bool) -> tuple[int | None, Seen]:
    """Tokens past a 300-token budget when the guard stops a hand-started runner."""
    state_dir, folder = workdir / "state", workdir / "datasets" / "B1"
    state_dir.mkdir(parents=True, mode=0o700)
    write_id_prompts(folder, 2000)
    inference = JobSpec(("{python}", "-m", "agent.pipeline.inference"), kind="inference")
    config = PipelineConfig(
        datasets=DatasetsConfig(str(folder.parent), budget=BUDGET, guards={"B1": "stop"}),
        jobs={"inference": inference},
    )
    sim_args = ("--speed", "1", "--per-request-rate", str(REQUEST_TOKENS_PER_S),
                "--mean-tokens", str(MEAN_TOKENS), "--sd-tokens", "5")  # fmt: skip
    seen = Seen()
    with contextlib.ExitStack() as stack:
        sim = stack.enter_context(running_simulator(workdir / "sim", *sim_args))
        async with local_agent(state_dir, config) as link:
            if locked:
                stack.enter_context(locked_by_another_process(state_dir / FILE_NAME))
            runner = start_runner(folder, sim.url, "--max-samples", "1500",
                                  "--concurrency", str(CONCURRENCY))  # fmt: skip
            stopped = await _runner_end(runner, link, seen)
    return (response_tokens(folder) - BUDGET if stopped else None), seen


async def _runner_end(runner: subprocess.Popen[str], link: AgentLink, seen: Seen) -> bool:
    deadline = time.monotonic() + GUARD_WAIT_S
    while runner.poll() is None:
        if time.monotonic() > deadline:
            runner.kill()
            runner.wait()
            return False
        before = time.monotonic()
        taken: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        seen.snapshot_s.append(time.monotonic() - before)
        seen.alerts |= {a.kind for a in taken.alerts}
        await asyncio.sleep(0.05)
    return True
