"""A running capture watched against its plan: bytes written, rate, ETA, and a quota.

Real files in a real folder; the meter's clock is the test's, so a rate over "ten seconds" is
measured without sleeping.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.operations.stages import Context, Fail, hidden_states_room
from agent.plans.capture_output import MAX_ENTRIES, CaptureMeter, Progress, walk_folder
from agent.plans.hidden_states import FILE_BYTES, hidden_states_plan, plan_alerts
from agent.protocol import (
    ExportSummary,
    HiddenStatesPlan,
    JobInfo,
    JobSpec,
    PipelineConfig,
    Snapshot,
)

HIDDEN = 8
PER_TOKEN = 4 * HIDDEN * 2 + 16


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\1" * size)


def config(tmp_path: Path, quota: int | None = None) -> PipelineConfig:
    (tmp_path / "m").mkdir(exist_ok=True)
    (tmp_path / "m" / "config.json").write_text(json.dumps({"hidden_size": HIDDEN}))
    argv = ("python", "-m", "agent.simulator.prepare_hidden_states", "--target-model-path",
            str(tmp_path / "m"), "--output-path", str(tmp_path / "hs"))  # fmt: skip
    spec = JobSpec(argv, kind="hidden_states", output_quota_bytes=quota)
    return PipelineConfig(jobs={"hs": spec})


def export(tokens: int, records: int) -> ExportSummary:
    return ExportSummary("e", "/out", 1.0, 1.0, 0.99, False, 10, 1.0, (), tokens, records)


def test_the_walk_counts_samples_and_every_file_and_gives_up_past_its_limit(
    tmp_path: Path,
) -> None:
    write(tmp_path / "rows_0-2000" / "data_0.ckpt", 1000)
    write(tmp_path / "rows_0-2000" / "data_1.ckpt", 500)
    write(tmp_path / "rows_0-2000" / "data_2.ckpt.partial", 300)  # not a sample yet
    write(tmp_path / "notes.txt", 7)
    os.symlink("/", tmp_path / "loop")  # never followed
    use = walk_folder(tmp_path, 1.0)
    assert use is not None
    assert (use.sample_bytes, use.sample_files, use.all_bytes) == (1500, 2, 1807)
    assert walk_folder(tmp_path, 1.0, limit=3) is None, "too many entries: not counted at all"
    assert walk_folder(tmp_path / "absent", 1.0) is None
    assert MAX_ENTRIES >= 1_000_000


def test_the_rate_and_eta_come_from_the_running_job_and_stay_as_the_next_estimate(
    tmp_path: Path,
) -> None:
    clock = Clock()
    meter = CaptureMeter(clock)
    folder = tmp_path / "hs"
    records, tokens = 10, 10_000
    needed = tokens * PER_TOKEN + records * FILE_BYTES["specforge"]
    pipeline = config(tmp_path)

    def plan_at(running: str | None) -> HiddenStatesPlan | None:
        def progress(name: str, where: Path) -> Progress:
            return meter.progress(name, running, where)

        return hidden_states_plan(pipeline, export(tokens, records), tmp_path, 0, progress)

    before = plan_at(None)
    assert before is not None
    assert (before.bytes_needed, before.bytes_written, before.eta_s) == (needed, None, None)
    write(folder / "data_0.ckpt", needed // 10)
    first = plan_at("hs-1")
    assert first is not None
    assert (first.bytes_written, first.files_written, first.bytes_per_s) == (needed // 10, 1, None)
    clock.now += 1.0  # walked again only once due: the same figure
    write(folder / "data_1.ckpt", needed // 10)
    again = plan_at("hs-1")
    assert again is not None
    assert again.bytes_written == needed // 10
    clock.now += 9.0
    now = plan_at("hs-1")
    assert now is not None
    assert now.bytes_written == 2 * (needed // 10)
    assert now.rate_is_current
    rate = (needed // 10) / 10.0
    assert now.bytes_per_s == pytest.approx(rate)
    assert now.eta_s == pytest.approx((needed - 2 * (needed // 10)) / rate)
    clock.now += 60.0  # it stopped: the rate stays, as an estimate for the next run
    after = plan_at(None)
    assert after is not None
    assert after.bytes_per_s == now.bytes_per_s
    assert not after.rate_is_current
    assert after.eta_s == pytest.approx((needed - (after.bytes_written or 0)) / rate)
    clock.now += 60.0
    rerun = plan_at("hs-2")  # a new run starts its own measure; the old rate until then
    assert rerun is not None
    assert not rerun.rate_is_current


def test_a_quota_bounds_the_room_counting_every_file_and_freed_space_lets_it_start(
    tmp_path: Path,
) -> None:
    """The demo's case: a stale capture fills most of a quota the disk's free space cannot show."""
    quota, records, tokens = 4 << 20, 20, 5_000  # needs 5,000 × 80 B + 20 × 2.2 KB ≈ 0.4 MiB
    pipeline = config(tmp_path, quota=quota)
    stale = tmp_path / "hs" / "stale-capture.tar"
    write(stale, quota - (200 << 10))
    clock = Clock()
    meter = CaptureMeter(clock)

    def plan_now() -> HiddenStatesPlan | None:
        return hidden_states_plan(
            pipeline, export(tokens, records), tmp_path, 1 << 30,
            lambda name, where: meter.progress(name, None, where),
        )  # fmt: skip

    refused = plan_now()
    assert refused is not None
    assert refused.room_by_quota
    assert refused.bytes_free == 200 << 10
    assert refused.fits is False
    assert refused.bytes_written == 0, "the stale file is not a sample: no progress, only use"
    assert refused.margin_bytes < 1 << 20, "the disk's floor is not the quota's margin"
    fail = hidden_states_room(Context(Snapshot(1.0, "h", None, (), hidden_states_plan=refused),
                                      pipeline, 0.0, 0.0))  # fmt: skip
    assert isinstance(fail, Fail)
    assert "the 4.0 MiB quota of" in fail.reason
    assert "leaves 200.0 KiB" in fail.reason
    stale.unlink()
    clock.now += 60.0
    roomy = plan_now()
    assert roomy is not None
    assert (roomy.fits, roomy.bytes_free) == (True, quota)


def test_a_running_capture_that_will_not_fit_warns_and_counts_what_it_wrote(
    tmp_path: Path,
) -> None:
    quota, records, tokens = 1 << 20, 10, 20_000  # needs 1.6 MB: more than the quota
    pipeline = config(tmp_path, quota=quota)
    write(tmp_path / "hs" / "rows_0-2000" / "data_0.ckpt", 300_000)
    meter = CaptureMeter(Clock())
    plan = hidden_states_plan(
        pipeline, export(tokens, records), tmp_path, 0,
        lambda name, where: meter.progress(name, "hs-1", where),
    )  # fmt: skip
    assert plan is not None
    assert plan.bytes_written == 300_000
    assert plan.bytes_free == quota - 300_000
    assert plan.fits is False
    running = JobInfo("hs-1", "hs", "hidden_states", "running", (), pid=1)
    [alert] = plan_alerts(plan, (running,), 1.0)
    assert alert.kind == "hidden_states_low_disk"
    assert "the 1.0 MiB quota of" in alert.message
