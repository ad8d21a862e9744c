"""Each reader of a snapshot fails or lags alone: its part is empty or stale, with an alert."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from agent.logs import last_lines
from agent.probes.pipeline_reports import PipelineReports
from agent.probes.training.log import TrainingLogParser
from agent.probes.training.watch import TrainingWatch
from agent.protocol import JobInfo, Snapshot
from agent.watch.isolated_readers import IsolatedReaders
from agent.watch.observer import Observer

NOW = 1_000.0


def test_a_reader_that_raises_gives_its_fallback_and_an_alert_until_it_reads_again() -> None:
    readers = IsolatedReaders()

    def broken() -> int:
        raise OverflowError("cannot convert float infinity to integer\x1b[2J")

    assert readers.inline("export report", 0, broken) == 0
    assert readers.bounded("training", -1, broken) == -1
    alerts = readers.alerts(NOW)
    assert [(a.kind, a.subject) for a in alerts] == [
        ("reader_failed", "export report"),
        ("reader_failed", "training"),
    ]
    assert "OverflowError: cannot convert float infinity to integer" in alerts[0].message
    assert "\x1b" not in alerts[0].message  # what a file made a reader say is made printable
    assert readers.inline("export report", 0, lambda: 7) == 7
    assert [a.subject for a in readers.alerts(NOW)] == ["training"]


def test_a_slow_reader_leaves_its_last_reading_goes_on_alone_and_is_not_started_twice() -> None:
    readers = IsolatedReaders(deadline_s=0.2)
    release, started = threading.Event(), []

    def slow() -> str:
        started.append(1)
        release.wait(30)
        return "new"

    assert readers.bounded("training", "none", lambda: "first") == "first"
    began = time.monotonic()
    assert readers.bounded("training", "none", slow) == "first"
    assert time.monotonic() - began < 5, "the snapshot waits the deadline, not the reader"
    assert readers.bounded("training", "none", slow) == "first"
    assert len(started) == 1, "a reader still running is not started again"
    [alert] = readers.alerts(NOW)
    assert (alert.kind, alert.subject) == ("reader_slow", "training")
    release.set()
    assert readers.bounded("training", "none", slow) == "new", "its reading is taken when it ends"
    assert readers.alerts(NOW) == ()


def test_a_report_with_an_infinity_is_no_report_and_never_an_error(tmp_path: Path) -> None:
    (tmp_path / "eval.json").write_text(
        json.dumps({"verdict": "x", "levels": [{"concurrency": 1}]}).replace("1}", "1e400}")
    )
    (tmp_path / "export_report.json").write_text('{"tokens": 1e400, "roundtrip": {}}')
    jobs = tuple(
        JobInfo(kind, kind, kind, "exited", ("--out", str(tmp_path)), started_at=1.0)
        for kind in ("evaluate", "export")
    )
    reports = PipelineReports()
    assert reports.evaluation(jobs) is None
    assert reports.export(jobs) is None


@pytest.mark.parametrize("unit", ["x", "1", " ", ": ", "5%|", "  a:1", "step 1: {"])
def test_thirty_long_log_lines_of_any_kind_are_read_in_well_under_a_second(unit: str) -> None:
    line = (unit * 12_000)[:12_000]
    parser = TrainingLogParser()
    began = time.monotonic()
    parser.feed((line + "\n") * 30)
    assert time.monotonic() - began < 1.0  # 11 s for one line of letters before the fix
    parser.feed("Training Epoch 1:  41%|████      | 820/2000 [01:00<01:30, loss=2.5]\n")
    assert (parser.state.epoch_step, parser.state.steps_per_epoch) == (820, 2000)


async def test_a_snapshot_that_cannot_be_encoded_still_reaches_the_listeners() -> None:
    heard: list[Snapshot] = []

    async def take() -> Snapshot:
        return Snapshot(time.time(), "host", None, (), (), (), gpu_note=object())  # type: ignore[arg-type]

    async def listen(snapshot: Snapshot) -> None:
        heard.append(snapshot)

    observer = Observer(take, lambda: (), asyncio.Event())
    observer.listeners.append(listen)
    await observer.scan()
    assert len(heard) == 1, "the budget guard hears every snapshot taken"
    assert observer.latest is None


def test_the_last_lines_an_event_carries_are_printable(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "ok\n\x1b]8;;http://x\x07link\x1b]8;;\x07 \u202eevil\u200b\x9b31m red\x1b[0m\n\x1b[2J\n"
    )
    assert last_lines(log, 3) == ["ok", "link evil31m red"]


def test_a_tqdm_bar_redrawn_without_a_newline_is_read_as_it_goes(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    bars = "".join(
        f"Training: {n // 20}%|##   | {n}/2000 [00:{n // 100:02d}<01:00]\r" for n in (100, 400, 820)
    )
    log.write_text(bars)  # tqdm writes no newline for as long as the bar runs
    job = JobInfo("t-1", "train", "train", "running", (), log_path=str(log), started_at=1.0)
    [progress] = TrainingWatch().progress((job,))
    assert (progress.step, progress.total_steps) == (820, 2000)


def test_a_reader_that_raises_timeout_error_itself_is_a_failure_not_a_reader_still_running() -> (
    None
):
    readers = IsolatedReaders(deadline_s=1.0)

    def nfs_read() -> int:
        raise TimeoutError("[Errno 110] Connection timed out")  # an NFS or FUSE read

    assert readers.bounded("training", -1, nfs_read) == -1
    assert [a.kind for a in readers.alerts(NOW)] == ["reader_failed"]
    assert readers.bounded("training", -1, lambda: 5) == 5, "started again at the next snapshot"


def test_redraws_past_a_capped_line_s_length_still_give_the_newest_step(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    redraws = [f"Training: {n // 20}%|##   | {n}/2000 [00:01<01:00]\r" for n in range(1, 1001)]
    log.write_text("".join(redraws))  # 60 KB of redraws between two reads, no newline
    job = JobInfo("t-1", "train", "train", "running", (), log_path=str(log), started_at=1.0)
    [progress] = TrainingWatch().progress((job,))
    assert progress.step == 1000
