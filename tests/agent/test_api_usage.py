"""The dataset status carries what an OpenAI-compatible runner reports in runner.json.

Re-encoded records, their mismatches, the cost so far and a 429 pause reach the snapshot's
DatasetProgress; a native SGLang run (all of them zero) adds nothing to it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent.datasets.detail import dataset_detail
from agent.datasets.tracker import DatasetTracker
from agent.pipeline.inference.status import RunStats, status_record
from agent.protocol import ApiUsage, DatasetProgress, DatasetsConfig
from tests.support.datasets import write_prompts


def scan(root: Path, state: str, **fields: Any) -> DatasetProgress:
    folder = root / "B1"
    write_prompts(folder, 4)
    stats = RunStats(rate_limited=fields.pop("rate_limited", 0))
    record = status_record({"state": state, "responses": 2, **fields}, stats)
    (folder / "runner.json").write_text(json.dumps(record))
    [progress] = DatasetTracker(DatasetsConfig(str(root))).progress()
    return progress


TALLY = {"dataset_cost": 0.0125, "dataset_reencoded": 3, "dataset_reencode_mismatches": 1}


def test_a_live_hosted_run_reports_its_tallies_and_its_pause(tmp_path: Path) -> None:
    before = time.time()
    progress = scan(tmp_path, "running", rate_limited=2, rate_limited_until_s=30.0, **TALLY)
    usage = progress.api_usage
    assert usage is not None
    assert (usage.reencoded_responses, usage.reencode_mismatches, usage.cost_credits) == (
        3,
        1,
        0.0125,
    )
    assert usage.rate_limited == 2
    assert usage.paused_until is not None
    assert before + 29 < usage.paused_until < time.time() + 31


def test_a_finished_run_keeps_its_tallies_but_pauses_nobody(tmp_path: Path) -> None:
    progress = scan(tmp_path, "finished", rate_limited_until_s=30.0, **TALLY)
    assert progress.api_usage == ApiUsage(3, 1, 0.0125, responses=2)


def test_a_native_run_adds_nothing(tmp_path: Path) -> None:
    zero = {"dataset_cost": 0.0, "dataset_reencoded": 0, "dataset_reencode_mismatches": 0}
    assert scan(tmp_path, "running", rate_limited_until_s=0.0, **zero).api_usage is None


def test_hostile_tallies_count_as_absent(tmp_path: Path) -> None:
    hostile = {"dataset_cost": -5, "dataset_reencoded": "3", "dataset_reencode_mismatches": True}
    progress = scan(tmp_path, "running", rate_limited_until_s="soon", **hostile)
    assert progress.api_usage == ApiUsage(reencoded_responses=3, responses=2)


def test_the_dataset_detail_carries_the_same_tallies(tmp_path: Path) -> None:
    progress = scan(tmp_path, "finished", **TALLY)
    detail = dataset_detail("B1", tmp_path / "B1", "raw_responses.jsonl", 5)
    assert detail.api_usage == progress.api_usage
    assert detail.api_usage is not None
