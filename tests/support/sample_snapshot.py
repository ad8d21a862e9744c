"""The sample host the console's tests show: a fixed snapshot at a fixed time.

Four datasets (one over budget, one running with an ETA), three jobs (one external), a healthy
server and two GPUs. Pictures and key tests build on it; nothing here draws anything.
"""

from __future__ import annotations

import dataclasses

from agent.protocol import (
    Alert,
    DatasetProgress,
    GpuSample,
    JobInfo,
    ServerStats,
    Snapshot,
    TrainingProgress,
)

NOW = 1_795_960_000.0
DATASETS = (
    DatasetProgress("B1_sharegpt", 60_000, 21_500, 10_000_000, 10_000_000, tokens_per_s=2_510.0,
                    status="complete", stop_condition="budget", target_responses=60_000,
                    target_tokens=10_000_000, mean_tokens_per_response=465.1),
    DatasetProgress("B2_ultrachat", 80_000, 2_912, 10_700_000, 10_000_000, tokens_per_s=2_480.0,
                    eta_s=0.0, projected_tokens=10_700_000, projected_overrun_tokens=700_000,
                    projected_overrun_hours=0.08, status="over_budget", stop_condition="max_samples",
                    target_responses=5_000),
    DatasetProgress("B3_math", 40_000, 1_200, 4_200_000, 5_000_000, tokens_per_s=2_400.0,
                    eta_s=333.0, eta_low_s=300.0, eta_high_s=410.0, projected_tokens=5_000_000,
                    projected_overrun_tokens=0, status="running", stop_condition="budget",
                    target_responses=40_000, writer_active=True),
    DatasetProgress("B4_code", 30_000, 0, 0, 10_000_000, status="pending"),
)  # fmt: skip
JOBS = (
    JobInfo("inference-B3_math-1", "inference", "inference", "running", ("python", "-m", "runner"),
            pid=4242, pgid=4240, dataset="B3_math", started_at=NOW - 4_000, gpu=False),
    JobInfo("sglang-1", "sglang", "server", "running", ("python", "-m", "sglang.launch_server"),
            pid=1200, pgid=1200, started_at=NOW - 90_000, gpu=True),
    JobInfo("ext-77-1", "hand-runner", "external", "running", ("python", "run_inference.py"),
            pid=77, pgid=77, started_at=NOW - 600, external=True),
)  # fmt: skip
SNAPSHOT = Snapshot(
    taken_at=NOW, host_name="gpu-node-3", datasets_root="/data/eagle3", datasets=DATASETS,
    alerts=(
        Alert("over_budget", "error", "B2_ultrachat: 10,700,000 tokens, 700,000 over its budget of 10,000,000", "B2_ultrachat"),
        Alert("stalled", "warning", "B5_sharegpt4: no new response for 12 min while its run is alive", "B5"),
    ),
    jobs=JOBS,
    server=ServerStats("http://127.0.0.1:30000", True, model_path="moonshotai/Kimi-K2", running_requests=64,
                       queued_requests=12, token_usage=0.81, gen_throughput_tokens_per_s=7_400.0),
    gpus=(GpuSample(0, "H200", 97.0, 120_000.0, 141_000.0, 66.0, 640.0, (1200,), ("sglang-1",)),
          GpuSample(1, "H200", 95.0, 119_000.0, 141_000.0, 64.0, 633.0, (1201,), ("sglang-1",))),
)  # fmt: skip


def at_rate(tokens_per_s: float) -> Snapshot:
    """The sample snapshot with the server generating `tokens_per_s`."""
    assert SNAPSHOT.server is not None
    server = dataclasses.replace(SNAPSHOT.server, gen_throughput_tokens_per_s=tokens_per_s)
    return dataclasses.replace(SNAPSHOT, server=server)


MORE = tuple(
    DatasetProgress(f"B{i}_extra", 10_000, 100 * i, 50_000 * i, 5_000_000, tokens_per_s=900.0,
                    eta_s=3_600.0 * i, status="running", writer_active=True)
    for i in range(5, 9)
)  # fmt: skip
TRAINING = TrainingProgress(
    "sglang-1", 600, 900, 1, 1.234, None, None, 2.8, 3.0, 500, 1_800.0,
    (3.0, 2.5, 2.0, 1.6, 1.3, 1.2), (1.5, 2.0, 2.4, 2.6, 2.8, 2.8),
)  # fmt: skip
CROWDED: Snapshot = dataclasses.replace(SNAPSHOT, datasets=DATASETS + MORE, training=(TRAINING,))
"""The sample host with eight datasets and a training run: more than a small terminal shows."""
ROWS = 40


def with_many_rows(taken_at: float) -> Snapshot:
    """SNAPSHOT with ROWS jobs and ROWS datasets, taken at `taken_at`."""
    jobs = tuple(
        JobInfo(f"job-{i:02d}", f"job-{i:02d}", "inference", "running", ("python",), pid=1000 + i,
                started_at=NOW - 60 * i)
        for i in range(ROWS)
    )  # fmt: skip
    datasets = tuple(
        DatasetProgress(f"D{i:02d}", 100, i, i * 10, 1_000, status="running") for i in range(ROWS)
    )
    return dataclasses.replace(SNAPSHOT, taken_at=taken_at, jobs=jobs, datasets=datasets)
