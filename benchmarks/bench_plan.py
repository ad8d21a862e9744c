"""Hidden-states plan: 8 datasets x 10M tokens of exported records, with the capture half written.
Goal: < 1 s a plan.

What a snapshot does for the plan, with the agent's own parts: the export's report read (8
datasets, 80M sequence tokens, 40,000 records), the target's config.json, the output folder's
free space, and a walk of the capture's output folder holding 20,000 sample files in SpecForge's
`rows_` folders (the first walk, then one due again). `BENCH_PLAN_FILES` overrides the count.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from agent.plans.capture_output import CaptureMeter
from agent.plans.hidden_states import hidden_states_plan
from agent.probes.pipeline_reports import PipelineReports
from agent.protocol import JobInfo, JobSpec, PipelineConfig

DATASETS = 8
TOKENS_PER_DATASET = 10_000_000
RECORDS = 40_000
GOAL_S = 1.0


def write_report(out: Path) -> None:
    out.mkdir(parents=True)
    (out / "export_report.json").write_text(json.dumps({
        "finished_at": 1.0, "min_roundtrip_share": 0.99, "tokens": DATASETS * TOKENS_PER_DATASET,
        "tokens_per_s": 1.0, "roundtrip": {"share": 1.0, "flagged": False}, "datasets": [],
        "sequence_tokens": DATASETS * TOKENS_PER_DATASET, "records": RECORDS,
    }))  # fmt: skip


def write_samples(folder: Path, count: int) -> None:
    for index in range(count):
        group = index // 2000 * 2000
        path = folder / f"rows_{group}-{group + 2000}" / f"data_{index}.ckpt"
        if index % 2000 == 0:
            path.parent.mkdir(parents=True)
        path.write_bytes(b"x")


def run() -> None:
    files = int(os.environ.get("BENCH_PLAN_FILES", RECORDS // 2))
    folder = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    try:
        write_report(folder / "export")
        (folder / "target").mkdir()
        (folder / "target" / "config.json").write_text(
            json.dumps({"text_config": {"hidden_size": 7168, "torch_dtype": "bfloat16"}})
        )
        write_samples(folder / "hs", files)
        argv = (sys.executable, "scripts/prepare_hidden_states.py", "--target-model-path",
                str(folder / "target"), "--output-path", str(folder / "hs"))  # fmt: skip
        pipeline = PipelineConfig(jobs={"hs": JobSpec(argv, kind="hidden_states")})
        export_job = JobInfo("export-1", "export", "export", "exited",
                             ("python", "--out", str(folder / "export")), started_at=1.0)  # fmt: skip
        reports, meter = PipelineReports(), CaptureMeter()
        took, needed = [], 0
        for _ in range(2):
            started = time.perf_counter()
            export = reports.export((export_job,))
            plan = hidden_states_plan(
                pipeline, export, folder, 1 << 30,
                lambda name, where: meter.progress(name, "hs-1", where),
            )  # fmt: skip
            took.append(time.perf_counter() - started)
            assert plan is not None
            assert plan.bytes_written == files, plan
            needed = plan.bytes_needed or 0
            meter.clock = lambda: time.monotonic() + 3600.0  # the next walk is due
        print(
            f"{DATASETS} x {TOKENS_PER_DATASET / 1e6:.0f}M tokens, {RECORDS:,} records at hidden "
            f"size 7,168: {needed / 2**40:,.1f} TiB planned; {files:,} sample files walked: first "
            f"plan {took[0] * 1000:.1f} ms, again {took[1] * 1000:.1f} ms (goal < {GOAL_S:g} s): "
            f"{'met' if max(took) < GOAL_S else 'missed'}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
