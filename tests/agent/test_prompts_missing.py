"""A dataset folder with no prompts file says so, not "pending", ETA "done" and "no prompt left"
."""

from __future__ import annotations

from pathlib import Path

from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetsConfig
from console.model.formatting import eta
from tests.support.datasets import write_prompts


def test_a_folder_without_prompts_is_an_alert_and_reads_no_prompts(tmp_path: Path) -> None:
    (tmp_path / "B9_empty").mkdir()
    write_prompts(tmp_path / "B1", 3)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path), budget=100))
    progress = {p.name: p for p in tracker.progress(1e9)}
    alerts = tracker.alerts(tuple(progress.values()), 1e9)
    assert [(a.kind, a.subject) for a in alerts] == [("prompts_missing", "B9_empty")]
    assert alerts[0].message.startswith(
        f"B9_empty: no prompts.jsonl in {tmp_path / 'B9_empty'}: nothing to generate"
    )
    empty = progress["B9_empty"]
    assert eta(empty, 1e9) == "no prompts"
    assert eta(progress["B1"], 1e9) != "no prompts"
