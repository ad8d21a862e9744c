"""A pipeline whose hidden-states job cannot fit where it writes.

An export report of 100,000 tokens to capture at hidden size 8 (7.7 MiB with the files'
containers), and a 1 MiB quota on the capture's output folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent.protocol import JobSpec, PipelineConfig

NAP = "import time; time.sleep(120)"
TOKENS, RECORDS, HIDDEN = 100_000, 10, 8


def report(out: Path) -> None:
    """The fields of export_report.json the agent's reader takes, with the tokens to capture."""
    out.mkdir(parents=True)
    (out / "export_report.json").write_text(json.dumps({
        "finished_at": 1.0, "min_roundtrip_share": 0.99, "tokens": TOKENS, "tokens_per_s": 1.0,
        "roundtrip": {"share": 1.0, "flagged": False}, "datasets": [],
        "sequence_tokens": TOKENS, "records": RECORDS,
    }))  # fmt: skip


def capture_pipeline(tmp_path: Path) -> PipelineConfig:
    report(tmp_path / "export")
    model = tmp_path / "target"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"hidden_size": HIDDEN}))
    hidden_states = (sys.executable, "-c", NAP, "prepare_hidden_states", "--target-model-path",
                     str(model), "--output-path", str(tmp_path / "hs"))  # fmt: skip
    return PipelineConfig(jobs={
        "export": JobSpec((sys.executable, "-c", "pass", "--out", str(tmp_path / "export")),
                          kind="export"),
        "hs": JobSpec(hidden_states, kind="hidden_states", output_quota_bytes=1 << 20, grace_s=5),
    })  # fmt: skip
