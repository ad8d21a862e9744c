"""Sample dataset folders written the way runners write them, with their expected counts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Expected:
    """What the agent must report for one dataset."""

    prompts: int
    responses: int
    tokens: int


def write_prompts(folder: Path, count: int) -> None:
    """`count` chat prompts with ids p0, p1, ..."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"question {i}"}]})
        for i in range(count)
    ]
    (folder / "prompts.jsonl").write_text("".join(line + "\n" for line in lines))


def response_line(response_id: str, tokens: int) -> str:
    """One response record as the runner writes it."""
    record = {
        "id": response_id,
        "output_ids": list(range(tokens)),
        "completion_tokens": tokens,
        "finish_reason": "stop",
    }
    return json.dumps(record) + "\n"


def write_sample_root(root: Path) -> dict[str, Expected]:
    """Three datasets: one in progress with a torn tail, one not started, one with duplicates."""
    write_prompts(root / "B1_sharegpt", 5)
    (root / "B1_sharegpt" / "raw_responses.jsonl").write_text(
        response_line("p0", 10)
        + response_line("p1", 20)
        + response_line("p2", 30)
        + '{"id": "p3", "out'
    )
    write_prompts(root / "B2_ultrachat", 2)
    write_prompts(root / "B3_math", 4)
    (root / "B3_math" / "raw_responses.jsonl").write_text(
        response_line("p0", 7) + response_line("p0", 7) + '{"id": "p1", "output_ids": [1, 2]}\n'
    )
    return {
        "B1_sharegpt": Expected(prompts=5, responses=3, tokens=60),
        "B2_ultrachat": Expected(prompts=2, responses=0, tokens=0),
        "B3_math": Expected(prompts=4, responses=2, tokens=9),
    }
