"""Dataset scanner: a cold scan of 200 MB of responses against the seeds' one-liner; an append.

A cold scan of a 200 MB raw_responses.jsonl, and one appended 25 KB line on a 1 GB file. Goals: a cold scan >= 15x the anchor measured in the same run (the seeds' one-liner:
json.loads each line and sum len(output_ids), in this process, over the same file); an append
< 1 ms. Both scans read a file the page cache holds (each is run once before it is timed).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.datasets.tracker import ResponseCounter

LINE_TOKENS = 3500
COLD_BYTES = 200 * 1024 * 1024
GOAL_RATIO = 15.0
ROUNDS = 3


def response_line(index: int, rng: random.Random) -> bytes:
    ids = [rng.randrange(32000) for _ in range(LINE_TOKENS)]
    record = {"id": f"p{index}", "output_ids": ids, "completion_tokens": LINE_TOKENS,
              "prompt_tokens": 120, "finish_reason": "stop", "latency_s": 41.2, "ts": 1.7e9,
              "runner_sha256": "ab" * 32, "meta_info": {"id": "rid", "completion_tokens": LINE_TOKENS}}  # fmt: skip
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def write_file(path: Path, size_bytes: int) -> int:
    rng = random.Random(0)
    block = b"".join(response_line(i, rng) for i in range(64))
    lines = 0
    with path.open("wb") as handle:
        while handle.tell() < size_bytes:
            handle.write(block)
            lines += 64
    return lines


def one_liner(path: Path) -> int:
    """The anchor: what the seed scripts did to count a responses file's tokens."""
    with path.open("rb") as handle:
        return sum(len(json.loads(line)["output_ids"]) for line in handle)


def counter_scan(path: Path) -> int:
    counter = ResponseCounter(path)
    counter.update()
    assert counter.responses == 64  # ids repeat per block: each counted once
    return counter.tokens


def best_of(scan: Callable[[Path], int], path: Path) -> float:
    """The fastest of ROUNDS timed scans, in seconds."""
    timings = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        scan(path)
        timings.append(time.perf_counter() - started)
    return min(timings)


def cold_scan(folder: Path) -> None:
    path = folder / "raw_responses.jsonl"
    lines = write_file(path, COLD_BYTES)
    size_mb = path.stat().st_size / 1e6
    assert one_liner(path) == lines * LINE_TOKENS  # both warmed up: the file is in the cache
    assert counter_scan(path) == 64 * LINE_TOKENS
    anchor_s, ours_s = best_of(one_liner, path), best_of(counter_scan, path)
    ratio = anchor_s / ours_s
    print(
        f"anchor (json.loads per line, sum len(output_ids), in-process): {size_mb:,.0f} MB, "
        f"{lines:,} lines in {anchor_s:.2f} s = {size_mb / anchor_s:,.0f} MB/s"
    )
    print(
        f"cold scan (ResponseCounter(path).update()): {ours_s:.3f} s = {size_mb / ours_s:,.0f} MB/s, "
        f"{lines * LINE_TOKENS / ours_s / 1e6:,.0f}M tokens/s"
    )
    print(
        f"ratio {ratio:.1f}x the anchor (goal >= {GOAL_RATIO:.0f}x: "
        f"{'met' if ratio >= GOAL_RATIO else 'missed'}); best of {ROUNDS} each, "
        f"load average {os.getloadavg()[0]:.2f}"
    )


def append_cost(folder: Path) -> None:
    path = folder / "big.jsonl"
    write_file(path, 1024 * 1024 * 1024)
    counter = ResponseCounter(path)
    counter.update()
    line = response_line(10**9, random.Random(1))
    timings = []
    for _ in range(50):
        with path.open("ab") as handle:
            handle.write(line)
        started = time.perf_counter()
        counter.update()
        timings.append(time.perf_counter() - started)
    timings.sort()
    print(
        f"append of one {len(line) / 1024:.0f} KB line to a 1 GB file: median "
        f"{timings[25] * 1000:.3f} ms, max {timings[-1] * 1000:.3f} ms (goal < 1 ms)"
    )


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        cold_scan(Path(folder))
    with tempfile.TemporaryDirectory() as folder:
        append_cost(Path(folder))
