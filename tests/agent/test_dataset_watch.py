"""The agent watching a real run: a sample-capped runner heading past its budget is flagged."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    SNAPSHOT,
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from tests.support.operations import local_link
from tests.support.runner_files import write_id_prompts
from tests.support.simulator_process import running_simulator


@pytest.mark.slow
async def test_a_sample_capped_run_raises_a_projected_overrun_alert(
    tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_id_prompts(root / "B3_math", 600)
    with running_simulator(
        tmp_path / "sim", "--speed", "10", "--mean-tokens", "120", "--sd-tokens", "20"
    ) as sim:
        config = PipelineConfig(
            datasets=DatasetsConfig(str(root), budget=6000),
            sglang_url=sim.url,
            jobs={
                "old-runner": JobSpec(
                    ("{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}",
                     "--dataset-dir", "{dataset_dir}", "--max-samples", "500", "--concurrency", "8"),
                    kind="inference", per_dataset=True,
                ),
            },
        )  # fmt: skip
        async with local_link(state_dir, config) as link:
            job: JobInfo = await link.call(
                JOBS_LAUNCH, LaunchParams("old-runner", "B3_math"), idempotency_key="run-1"
            )
            seen: list[DatasetProgress] = []
            alert_kinds: set[str] = set()
            deadline = time.monotonic() + 60
            while "projected_overrun" not in alert_kinds and time.monotonic() < deadline:
                snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
                seen.append(snapshot.datasets[0])
                alert_kinds = {alert.kind for alert in snapshot.alerts}
                await asyncio.sleep(0.2)

    latest = seen[-1]
    assert "projected_overrun" in alert_kinds, seen[-1]
    assert job.dataset == "B3_math"
    assert latest.stop_condition == "max_samples"
    assert latest.target_responses == 500
    assert latest.writer_active
    assert latest.projected_tokens is not None
    assert latest.projected_tokens > 6000 * 5
    assert latest.projected_overrun_tokens == latest.projected_tokens - 6000
    assert latest.tokens_per_s is not None
    assert latest.tokens_per_s > 0
    assert sys.executable in job.argv
