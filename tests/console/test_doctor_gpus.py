"""doctor's GPU line: no GPU fails only where a configured job needs one.

It failed on every box without nvidia-smi, a box that serves through a hosted API included.
"""

from __future__ import annotations

from agent.protocol import GpuSample, Snapshot
from console.cli.doctor import gpus_line

NO_GPU = Snapshot(1.0, "h", None, (), gpu_note="no GPU: nvidia-smi not found")


def test_no_gpu_and_no_job_that_needs_one_is_ok() -> None:
    check = gpus_line(NO_GPU, [])
    assert check.ok
    assert check.detail == "none (no GPU: nvidia-smi not found); no configured job has gpu = true"


def test_no_gpu_where_jobs_need_one_fails_naming_them() -> None:
    check = gpus_line(NO_GPU, ["sglang", "train"])
    assert not check.ok
    assert check.detail == "no GPU: nvidia-smi not found; the jobs sglang, train have gpu = true"


def test_gpus_seen_are_ok_whatever_the_jobs() -> None:
    gpu = GpuSample(0, "H200", 50.0, 1000.0, 140000.0, 40.0, 300.0)
    assert gpus_line(Snapshot(1.0, "h", None, (), gpus=(gpu,)), ["sglang"]).ok
