"""Restart scan: the tracker's first full update after an agent restart, on 8 x 1 MB and 8 x 1 GB
of raw_responses.jsonl (every id distinct), against the cold scan. Goal: < 1 s, flat
in the data's size.

Each size is two lives of the agent's real parts: a tracker with its keeper and store scans cold
and stops (keeping its scans as the daemon does at its stop), then a new tracker over a new store
takes up what was kept. `BENCH_RESTART_SIZES_MB` (comma-separated) overrides the sizes.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetProgress, DatasetsConfig
from agent.watch.scan_store import ScanStore
from benchmarks.bench_scan import LINE_TOKENS, response_line

DATASETS = 8
SIZES_MB = (1, 1024)
GOAL_S = 1.0


def write_responses(path: Path, size_bytes: int) -> int:
    """Lines of bench_scan's shape, each with its own id, written fast: one line, ids swapped in."""
    line = response_line(0, random.Random(0))
    head, tail = line.split(b'"p0"', 1)
    lines = -(-size_bytes // (len(line) + 9))
    with path.open("wb") as handle:
        for start in range(0, lines, 256):
            batch = range(start, min(start + 256, lines))
            handle.write(b"".join(head + b'"p%09d"' % i + tail for i in batch))
    return lines


def write_root(root: Path, size_bytes: int) -> int:
    lines = 0
    for index in range(DATASETS):
        folder = root / f"D{index}"
        folder.mkdir(parents=True)
        (folder / "prompts.jsonl").write_text('{"id": "p0", "prompt": "q"}\n')
        lines = write_responses(folder / "raw_responses.jsonl", size_bytes)
    return lines


def life(root: Path, state: Path) -> tuple[float, float, tuple[DatasetProgress, ...]]:
    """(first update s, stop s, progress) of one life: a tracker's first update, then its stop."""
    store = ScanStore(state / "scans")
    tracker = DatasetTracker(DatasetsConfig(str(root)), keeper=ScanKeeper(store))
    started = time.perf_counter()
    progress = tracker.progress()
    first_s = time.perf_counter() - started
    tracker.keep_scans()
    store.close(within_s=600.0)
    return first_s, time.perf_counter() - started - first_s, progress


def one_size(size_mb: int) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    try:
        root, state = folder / "root", folder / "state"
        state.mkdir(mode=0o700)
        started = time.perf_counter()
        lines = write_root(root, size_mb * 1024 * 1024)
        wrote_s = time.perf_counter() - started
        cold_s, keep_s, cold = life(root, state)
        restart_s, _, again = life(root, state)
        assert again == cold or [p.responses for p in again] == [p.responses for p in cold]
        assert all(p.responses == lines and p.corrupt_lines == 0 for p in again), again
        kept_mb = sum(f.stat().st_size for f in (state / "scans").iterdir()) / 1e6
        total_mb = DATASETS * size_mb * 1.048576
        print(
            f"{DATASETS} x {size_mb:,} MiB ({total_mb:,.0f} MB, {DATASETS * lines:,} responses, "
            f"{DATASETS * lines * LINE_TOKENS / 1e6:,.0f}M tokens; written in {wrote_s:.1f} s): "
            f"cold scan {cold_s:.2f} s ({total_mb / cold_s:,.0f} MB/s); keeping it at the stop "
            f"{keep_s:.2f} s ({kept_mb:.1f} MB kept); first update after the restart "
            f"{restart_s * 1000:.1f} ms"
        )
        return restart_s
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run() -> None:
    sizes = os.environ.get("BENCH_RESTART_SIZES_MB")
    chosen = tuple(int(s) for s in sizes.split(",")) if sizes else SIZES_MB
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    took = [one_size(size) for size in chosen]
    verdict = "met" if max(took) < GOAL_S else "missed"
    print(
        f"first update after a restart: {', '.join(f'{t * 1000:.1f} ms' for t in took)} for "
        f"{', '.join(f'{DATASETS} x {s:,} MiB' for s in chosen)} (goal < {GOAL_S:g} s, flat in "
        f"the data's size): {verdict}"
    )
