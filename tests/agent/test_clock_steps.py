"""Rates, ETAs, stall and freshness decisions survive the wall clock stepping back and forward.

The tracker gets an injected clock whose wall time steps while its monotonic time runs evenly,
the way NTP or a VM resume steps a real host. The files are real, and their mtimes follow the
stepped wall clock, as the kernel's stamps do.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from agent.datasets.runner_status import FRESH_S
from agent.datasets.tracker import DatasetTracker
from agent.datasets.writers import WriterFinder
from agent.host.clock import StampAge, StepWatch
from agent.host.wall_clock import STEP_ALERT_S, WallClockWatch
from agent.pipeline.inference.status import RunStats
from agent.probes.cache import ProbeCache
from agent.protocol import (
    DatasetProgress,
    DatasetsConfig,
    JobInfo,
    PipelineConfig,
    ServerStats,
)
from agent.state.health import StateHealth
from agent.watch.guard import stall_alerts
from agent.watch.snapshot_assembly import Finish, SnapshotAssembly
from tests.support.clocks import SteppedClock, live_run_problem
from tests.support.datasets import response_line, write_prompts

TOKENS_PER_RESPONSE = 100
STALL_AFTER_S = 600.0


class FakeRun:
    """A runner writing one dataset: responses, and runner.json stamped with the wall clock."""

    def __init__(self, folder: Path, clock: SteppedClock) -> None:
        self.folder, self.clock, self.written = folder, clock, 0
        write_prompts(folder, 100_000)

    def answer(self) -> None:
        path = self.folder / "raw_responses.jsonl"
        with path.open("a") as handle:
            handle.write(response_line(f"p{self.written}", TOKENS_PER_RESPONSE))
        self.written += 1
        os.utime(path, (self.clock.wall(), self.clock.wall()))  # the kernel stamps wall time
        self.report()

    def report(self) -> None:
        status = {"pid": os.getpid(), "state": "running", "updated_at": self.clock.wall()}
        (self.folder / "runner.json").write_text(json.dumps(status))


def scan(tracker: DatasetTracker) -> DatasetProgress:
    [progress] = tracker.progress()
    return progress


def test_rates_and_etas_hold_across_steps_back_and_forward(tmp_path: Path) -> None:
    clock = SteppedClock()
    run = FakeRun(tmp_path / "B1", clock)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path), stall_after_s=STALL_AFTER_S), clock)
    steps = {30: -3600.0, 60: +7200.0, 90: -86400.0, 100: +30.0}
    for second in range(130):
        clock.monotonic_s += 1
        clock.offset_s += steps.get(second, 0.0)
        run.answer()
        progress = scan(tracker)
        if second < 5:
            continue
        assert live_run_problem(progress, TOKENS_PER_RESPONSE, 1.01) is None, second
        age = progress.last_response_age_s(clock.wall())
        assert age is not None
        assert age <= 1.0, second


def test_a_frozen_run_goes_stale_on_time_though_the_clock_stepped_back(tmp_path: Path) -> None:
    clock = SteppedClock()
    run = FakeRun(tmp_path / "B1", clock)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path)), clock)
    for _ in range(5):
        clock.monotonic_s += 1
        run.answer()
        assert scan(tracker).writer_active
    clock.offset_s -= 3600  # the run froze just before; runner.json is now "from the future"
    clock.monotonic_s += FRESH_S / 2
    assert scan(tracker).writer_active
    clock.monotonic_s += FRESH_S
    assert not scan(tracker).writer_active


def test_a_step_forward_is_no_stall_and_a_real_stall_still_is(tmp_path: Path) -> None:
    clock = SteppedClock()
    run = FakeRun(tmp_path / "B1", clock)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path), stall_after_s=STALL_AFTER_S), clock)
    for _ in range(5):
        clock.monotonic_s += 1
        run.answer()
        scan(tracker)
    clock.offset_s += 2 * 3600  # wall time jumps two hours; the run is still answering
    clock.monotonic_s += 1
    run.report()
    assert scan(tracker).status == "running"
    for _ in range(int(STALL_AFTER_S // 10) + 2):  # then it answers no more, runner.json goes on
        clock.monotonic_s += 10
        run.report()
        progress = scan(tracker)
    assert progress.status == "stalled"
    age = progress.last_response_age_s(clock.wall())
    assert age is not None
    assert STALL_AFTER_S < age < STALL_AFTER_S + 30


def test_a_stamp_from_the_future_is_new_and_ages_on_the_monotonic_clock() -> None:
    age = StampAge()
    assert age.age_s(stamp=2000.0, wall_now=1000.0, monotonic_now=50.0) == 0.0
    assert age.age_s(stamp=2000.0, wall_now=1000.0, monotonic_now=80.0) == 30.0
    old = StampAge()  # first seen: its wall age, however the clocks differ
    assert old.age_s(stamp=900.0, wall_now=1000.0, monotonic_now=50.0) == 100.0
    assert old.age_s(stamp=5000.0, wall_now=9000.0, monotonic_now=52.0) == 2.0  # rewritten since


def test_steps_are_seen_and_job_ends_age_evenly() -> None:
    clock = SteppedClock()
    watch = WallClockWatch(clock)
    watch.observe()
    ended = JobInfo("j1", "job", "command", "exited", (), ended_at=clock.wall() - 5)
    assert watch.ended_age_s(ended) == 5.0
    assert watch.alerts(clock.wall()) == []
    clock.offset_s -= 3 * 3600
    clock.monotonic_s += 1
    watch.observe()
    [alert] = watch.alerts(clock.wall())
    assert alert.kind == "clock_stepped"
    assert "stepped back by 3.0 h" in alert.message
    assert watch.ended_age_s(ended) == 6.0
    clock.monotonic_s += STEP_ALERT_S + 1
    assert watch.ended_age_s(ended) == 7.0 + STEP_ALERT_S
    assert watch.alerts(clock.wall()) == []
    assert StepWatch().step_s(100.0, 1.0) == 0.0


def test_the_runners_own_rate_uses_the_monotonic_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    stats = RunStats(tokens_this_run=1000)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 86400)  # a step back of a day
    assert stats.tokens_per_s() > 1000  # not 1000 tokens over "minus a day"


async def test_a_snapshot_dates_its_datasets_by_the_time_it_was_taken_at(tmp_path: Path) -> None:
    clock = SteppedClock()
    run = FakeRun(tmp_path / "data" / "B1", clock)
    config = DatasetsConfig(str(tmp_path / "data"), stall_guard_s=60)
    tracker = DatasetTracker(config, clock)
    assembly = SnapshotAssembly(ProbeCache(), WriterFinder(), StateHealth(tmp_path / "state"))
    finish = Finish(jobs=lambda: (), alerts=lambda snapshot: snapshot)
    clock.offset_s -= 3600  # the host's clock stepped back an hour, and this process's too
    for _ in range(3):
        clock.monotonic_s += 1
        run.answer()
        snapshot = await assembly.take(finish, tracker, PipelineConfig(datasets=config))
    [progress] = snapshot.datasets
    age = progress.last_response_age_s(snapshot.taken_at)
    assert age is not None
    assert age < 5, "aged against a wall time other than the one it was dated by"
    assert (progress.status, progress.writer_active) == ("running", True)
    assert not [a for a in snapshot.alerts if a.kind in ("stalled", "writer_stalled")]
    healthy = replace(snapshot, server=ServerStats("http://s", healthy=True, detail="ok"))
    assert stall_alerts(healthy, config) == []
