"""A dataset's responses file read back between faults: what was appended, torn, or lost.

It follows `raw_responses.jsonl` by byte offset (the file only grows, apart from a torn tail that
resume cuts off), so each observation reads only what the last run appended, however large the
file has grown. It never writes the responses file except to plant a torn tail on purpose.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Observation:
    """What one look at the responses file after a kill found."""

    new_ids: list[str]
    bad_offsets: list[int]
    """Complete lines that are not records (corruption the runner wrote)."""
    torn_tail: bytes


@dataclass
class ResponsesFollower:
    """Reads the complete lines appended since the last look, remembering where each one lies."""

    path: Path
    end: int = 0
    """Just past the last complete line read."""
    spans: list[tuple[int, int]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    def observe(self) -> Observation:
        """The complete lines after `end`, and the bytes after the last newline."""
        data = self._read_from_end()
        cut = data.rfind(b"\n") + 1
        new_ids, bad = [], []
        offset = self.end
        for line in data[:cut].splitlines(keepends=True):
            record_id = record_id_of(line)
            if record_id is None:
                bad.append(offset)
            else:
                new_ids.append(record_id)
                self.spans.append((offset, len(line)))
                self.sizes.append(len(line))
            offset += len(line)
        self.end += cut
        return Observation(new_ids, bad, data[cut:])

    def _read_from_end(self) -> bytes:
        if not self.path.exists():
            return b""
        with self.path.open("rb") as handle:
            handle.seek(self.end)
            return handle.read()

    def plant_torn_tail(self, rng: random.Random) -> bytes:
        """Append the first bytes of a random complete line, as a writer killed mid-line leaves."""
        offset, length = rng.choice(self.spans)
        with self.path.open("rb") as handle:
            handle.seek(offset)
            line = handle.read(length)
        fragment = line[: rng.randrange(1, length - 1)]
        with self.path.open("ab") as handle:
            handle.write(fragment)
        return fragment


def record_id_of(line: bytes) -> str | None:
    """The id of a complete, well-formed response line, or None if it is not one."""
    if not line.endswith(b"\n"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        return None
    output_ids = record.get("output_ids")
    if not isinstance(output_ids, list) or record.get("completion_tokens") != len(output_ids):
        return None
    record_id: str = record["id"]
    return record_id


@dataclass(frozen=True, slots=True)
class FinalFile:
    """The finished responses file: how often each id occurs, and the lines that are not records."""

    ids: Counter[str]
    corrupt_lines: int
    smallest_bytes: int
    largest_bytes: int


def read_final(path: Path) -> FinalFile:
    """Parse every line of the finished file."""
    ids: Counter[str] = Counter()
    corrupt, sizes = 0, []
    with path.open("rb") as handle:
        for line in handle:
            record_id = record_id_of(line)
            if record_id is None:
                corrupt += 1
                continue
            ids[record_id] += 1
            sizes.append(len(line))
    return FinalFile(ids, corrupt, min(sizes, default=0), max(sizes, default=0))


def write_prompts(path: Path, count: int) -> list[str]:
    """`count` prompts with distinct input_ids (the simulator plans each answer from them)."""
    ids = [f"p{number}" for number in range(count)]
    with path.open("w") as handle:
        for number, prompt_id in enumerate(ids):
            tokens = [1, 2, 3 + number % 30000, number // 30000]
            handle.write(json.dumps({"id": prompt_id, "input_ids": tokens}) + "\n")
    return ids


def size_buckets(sizes: list[int]) -> str:
    """How many records fall under 2 KB, 2-50 KB and over 50 KB."""
    small = sum(size < 2048 for size in sizes)
    large = sum(size > 50 * 1024 for size in sizes)
    return f"{small} < 2 KB, {len(sizes) - small - large} of 2-50 KB, {large} > 50 KB"
