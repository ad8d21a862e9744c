"""The agent calls a dataset complete by the runner's own rule, and so do the pipeline view and G."""

from __future__ import annotations

import json
from pathlib import Path

from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetProgress, DatasetsConfig, Snapshot
from console.model.pipeline_view import stages
from tests.support.datasets import response_line, write_prompts


def test_a_dataset_whose_last_prompts_failed_for_good_is_complete(tmp_path: Path) -> None:
    write_prompts(tmp_path / "B1", 3)
    (tmp_path / "B1" / "raw_responses.jsonl").write_text(
        response_line("p0", 10) + response_line("p1", 10)
    )
    errors = [{"id": "p2", "permanent": True}, {"id": "p1", "permanent": True}, {"id": "p0"}]
    (tmp_path / "B1" / "errors.jsonl").write_text("".join(json.dumps(e) + "\n" for e in errors))

    [progress] = DatasetTracker(DatasetsConfig(str(tmp_path), budget=1000)).progress(1e9)

    assert (progress.failed_prompts, progress.prompts_left) == (1, 0)
    assert progress.status == "complete"
    assert progress.generation_done


def test_a_dataset_29_tokens_under_its_budget_with_prompts_left_is_not_done(
    tmp_path: Path,
) -> None:
    write_prompts(tmp_path / "B1", 300)
    (tmp_path / "B1" / "raw_responses.jsonl").write_text(
        "".join(response_line(f"p{n}", 500) for n in range(199)) + response_line("p199", 471)
    )

    [progress] = DatasetTracker(DatasetsConfig(str(tmp_path), budget=100_000)).progress(1e9)

    assert (progress.tokens, progress.prompts_left) == (99_971, 100)
    assert progress.status == "idle"
    assert not progress.generation_done


def test_the_pipeline_view_uses_the_rule_not_the_status_word() -> None:
    short = DatasetProgress("B1", 300, 200, 99_971, 100_000, status="idle")
    failed = DatasetProgress("B2", 3, 2, 20, 100_000, status="complete", failed_prompts=1)
    reached = DatasetProgress("B3", 300, 200, 100_010, 100_000, status="complete")

    def generate(*datasets: DatasetProgress) -> str:
        return stages(Snapshot(1.0, "h", "/d", datasets))[0].state

    assert generate(failed, reached) == "done"
    assert generate(short, failed, reached) == "running"
