"""Dataset scanner: a cold scan of a 200 MB raw_responses.jsonl, and one appended 25 KB line on a
1 GB file. Goals (issue: agent daemon): >= 600 MB/s cold; < 1 ms per append.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from agent.datasets.tracker import ResponseCounter

LINE_TOKENS = 3500


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


def cold_scan(folder: Path) -> None:
    path = folder / "raw_responses.jsonl"
    lines = write_file(path, 200 * 1024 * 1024)
    size_mb = path.stat().st_size / 1e6
    counter = ResponseCounter(path)
    started = time.perf_counter()
    counter.update()
    took = time.perf_counter() - started
    assert counter.responses == 64  # ids repeat per block: each counted once
    print(
        f"cold scan: {size_mb:,.0f} MB, {lines:,} lines in {took:.2f} s = {size_mb / took:,.0f} MB/s, "
        f"{lines * LINE_TOKENS / took / 1e6:,.0f}M tokens/s (goal >= 600 MB/s)"
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
