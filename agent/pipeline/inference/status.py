"""What the runner says about itself.

`runner.json` is rewritten atomically about once a second; a progress line goes to stderr for
people reading the job log.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.bundle import running_bundle_sha256
from agent.pipeline.inference.storage import rewrite_in_place
from agent.protocol import bundle_digest, bundle_files
from agent.state import write_json_atomic

if TYPE_CHECKING:
    from agent.pipeline.inference.backends.base import Generation


@cache
def runner_sha256() -> str:
    """The digest of the runner's own code, so a console can tell a stale copy is running."""
    return bundle_digest(bundle_files(Path(__file__).resolve().parent))


@dataclass
class RunStats:
    """Counters of this run (resumed work is counted apart)."""

    dispatched: int = 0
    completed: int = 0
    errors: int = 0
    retries: int = 0
    truncated: int = 0
    discarded_tokens: int = 0
    cancelled_requests: int = 0
    tokens_this_run: int = 0
    rate_limited: int = 0
    """Times an API's rate limit (429) paused dispatch."""
    cost: float = 0.0
    """What the answers kept this run cost, summed from `usage.cost` where the API reports it."""
    reencoded: int = 0
    """Answers kept as text re-encoded with the target's tokenizer (a text-only API)."""
    reencode_mismatches: int = 0
    """Of those, how many re-encoded to a length other than the server's completion_tokens."""
    started_at: float = field(default_factory=time.time)
    """Epoch seconds, for people; durations use the monotonic clock (the wall clock may step)."""

    def __post_init__(self) -> None:
        self._started_monotonic = time.monotonic()

    def count_answer(self, answer: Generation) -> None:
        """Add one kept answer's cost and re-encoding to the counters."""
        self.cost = round(self.cost + (answer.cost or 0.0), 9)
        self.reencoded += answer.reencoded
        self.reencode_mismatches += answer.mismatch

    def tokens_per_s(self) -> float:
        """Completion tokens per second of this run so far (on the monotonic clock)."""
        return self.tokens_this_run / max(time.monotonic() - self._started_monotonic, 1e-9)


def status_record(fields: dict[str, Any], stats: RunStats) -> dict[str, Any]:
    """The runner.json object: identity, run counters and the given live fields."""
    return {
        "pid": os.getpid(),
        "runner_sha256": runner_sha256(),
        "code_path": str(Path(__file__).resolve().parent),
        "bundle_sha256": running_bundle_sha256(),
        "argv": [sys.executable, "-m", "agent.pipeline.inference", *sys.argv[1:]],
        "updated_at": time.time(),
        "tokens_per_s": round(stats.tokens_per_s(), 2),
        **asdict(stats),
        **fields,
    }


def write_status(path: Path, record: dict[str, Any]) -> bool:
    """Replace runner.json so a reader never sees half of it; False if there was no room at all.

    On a full disk the atomic replace (a new file) fails; runner.json is then rewritten in its
    own blocks, so the reason the run stopped still reaches the agent.
    """
    try:
        write_json_atomic(path, record)
    except OSError:
        try:
            rewrite_in_place(path, json.dumps(record).encode())
        except OSError:
            return False
    return True


def progress_line(name: str, record: dict[str, Any]) -> str:
    """One human-readable line of where the run stands."""
    budget = record.get("budget")
    tokens = record["tokens"]
    share = f" ({100 * tokens / budget:.1f}%)" if budget else ""
    of_budget = f"/{budget:,}" if budget else ""
    answered = f"{record['responses']:,}/{record['prompts']:,} responses"
    if record.get("conversations"):
        answered = (
            f"{record['responses']:,} answers to {record['prompts']:,} prompts "
            f"({record['conversations_done']:,}/{record['conversations']:,} conversations, "
            f"{record['turns_done']:,}/{record['turns']:,} turns)"
        )
    return (
        f"[{name}] {record['state']}: {answered}, "
        f"{tokens:,}{of_budget} tokens{share}, {record['tokens_per_s']:,.0f} tok/s, "
        f"in flight {record['in_flight']}, retries {record['retries']}, "
        f"errors {record['errors']}, truncated {record['truncated']}"
    )
