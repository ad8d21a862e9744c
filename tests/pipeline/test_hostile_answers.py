"""A server that answers what a broken or malicious peer answers never hangs the runner, never gets
a bad record written, and never costs a prompt silently (#28).

Before: completion_tokens of -50 sent the budget counting into an endless loop, 10**12 hung it,
ids as strings, a NaN, ids of -1 were written as records the agent then called corrupt, and a
body cut mid-way lost its prompt with no errors.jsonl line. Each prompt here gets one kind of
hostile answer on every try from a real HTTP server on loopback; p0 gets a good one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hostile_server import HOSTILE, hostile_server
from tests.support.runner_files import response_ids, run_runner, status, write_id_prompts


@pytest.fixture
def hostile_url(tmp_path: Path) -> Iterator[str]:
    with hostile_server(tmp_path / "server") as url:
        yield url


@pytest.mark.slow
def test_each_hostile_answer_is_refused_retried_and_marked_never_written(
    tmp_path: Path, hostile_url: str
) -> None:
    folder = tmp_path / "B1"
    write_id_prompts(folder, 1 + len(HOSTILE))
    result = run_runner(folder, hostile_url, "--api", "sglang", "--max-retries", "1")
    assert response_ids(folder) == {"p0": 1}, "only the good answer is a record"
    errors = [json.loads(line) for line in (folder / "errors.jsonl").read_text().splitlines()]
    marked = {error["id"]: error for error in errors}
    assert set(marked) == set(HOSTILE), result.stderr
    for prompt, (kind, _) in HOSTILE.items():
        reason = marked[prompt].get("error") or marked[prompt].get("reason") or ""
        assert "gave up after 2 failures" in json.dumps(marked[prompt]), (kind, marked[prompt])
        assert reason, kind
    final = status(folder)
    assert final["completed"] == 1
    assert final["tokens_this_run"] == 3
