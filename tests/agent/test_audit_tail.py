"""audit.read reads from the end of the audit log: its cost follows the entries asked for."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from agent.journal.audit import AuditLog, tail_lines


def entry(number: int) -> bytes:
    record = {"ts": float(number), "client": "c", "method": "jobs.stop",
              "params": {"job_id": f"j{number}", "pad": "x" * 300}, "idempotency_key": f"k{number}",
              "outcome": "ok"}  # fmt: skip
    return json.dumps(record).encode() + b"\n"


def test_the_newest_entries_of_a_large_log_are_read_without_loading_it(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with path.open("wb") as handle:
        handle.writelines(entry(n) for n in range(120_000))  # ~44 MB
        handle.write(b"{torn")
    tracemalloc.start()
    try:
        entries = AuditLog(path).last(3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [e.params["job_id"] for e in entries] == ["j119997", "j119998", "j119999"]
    assert peak < 1024 * 1024


def test_tail_lines_at_every_size(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"".join(b"%d\n" % n for n in range(50)))
    assert tail_lines(path, 3, 10**6) == [b"47", b"48", b"49"]
    assert tail_lines(path, 100, 10**6) == [b"%d" % n for n in range(50)]
    assert tail_lines(path, 100, 9) == [b"47", b"48", b"49"]  # never more than max_bytes back
    assert tail_lines(path, 0, 10**6) == []
    assert tail_lines(tmp_path / "missing", 3, 10**6) == []
