"""A history that misbehaves (locked, corrupt, truncated, read-only, huge) never stalls the watch."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from agent.protocol import (
    DATASETS_DETAIL,
    EVENTS_LIST,
    SNAPSHOT,
    DatasetDetail,
    DatasetProgress,
    DatasetsConfig,
    DetailParams,
    EventsList,
    EventsParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from agent.tasks import TaskOwner
from agent.watch.history import FILE_NAME, History, HistoryUnavailable, Point, Retention
from agent.watch.recorder import Recorder
from tests.support.datasets import response_line, write_prompts
from tests.support.hostile_files import no_dac_prefix
from tests.support.operations import local_link
from tests.support.sqlite_lock import locked_by_another_process
from tests.support.waits import until


def snapshot(tokens: int) -> Snapshot:
    return Snapshot(
        time.time(), "h", None, (DatasetProgress("B1", 10, tokens, tokens, None),), (), ()
    )


def kinds(history: History) -> list[str]:
    return [alert.kind for alert in history.alerts(time.time() + 60)]


async def test_a_history_locked_by_another_process_holds_up_no_snapshot_listener(
    tmp_path: Path,
) -> None:
    history = History(tmp_path)
    recorder = Recorder(history, TaskOwner("test"))
    try:
        with locked_by_another_process(tmp_path / FILE_NAME):
            started = time.monotonic()
            for tokens in range(1, 21):
                await recorder.heard(snapshot(tokens * 100))
                await history.add_event("deploy", "x", "a deploy")
            took_s = time.monotonic() - started
            assert took_s < 1.0, f"20 scans waited {took_s:.1f} s on the locked history"
            await until(lambda: "history_stalled" in kinds(history), "writes held up, an alert")
        assert await asyncio.to_thread(history.written, 10.0), "the lock gone, writes go through"
        events = await asyncio.to_thread(history.events, 0.0, 100)
    finally:
        history.close()
    assert sum(event.kind == "deploy" for event in events) == 20, "nothing lost to the lock"
    assert "history_stalled" not in kinds(history)


async def test_a_file_that_is_no_database_is_moved_aside_and_a_fresh_history_started(
    tmp_path: Path,
) -> None:
    garbage = b"this is not SQLite\n" * 1000
    (tmp_path / FILE_NAME).write_bytes(garbage)
    with closing(History(tmp_path)) as history:
        await history.add_event("deploy", "x", "a deploy")
        assert await asyncio.to_thread(history.written, 10.0)
        events = await asyncio.to_thread(history.events, 0.0, 10)
    assert [event.kind for event in events] == ["deploy"]
    aside = list(tmp_path.glob(f"{FILE_NAME}.corrupt-*"))
    assert [path.read_bytes() for path in aside if path.name[-4:] not in ("-wal", "-shm")] == [
        garbage
    ], "the damaged file is kept aside"
    alerts = history.alerts(time.time())
    assert [(a.kind, a.severity) for a in alerts] == [("history_reset", "error")], "one alert"
    assert aside[0].name in alerts[0].message


def filled(path: Path, rows: int) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE points (dataset TEXT, ts REAL, tokens INTEGER, responses INTEGER)")
        db.execute("CREATE INDEX points_by_dataset ON points (dataset, ts)")
        db.executemany(
            "INSERT INTO points VALUES (?,?,?,?)",
            ((f"B{n % 7}", float(n), n, n) for n in range(rows)),
        )
    db.close()


async def test_a_truncated_history_is_read_as_unavailable_then_started_afresh(
    tmp_path: Path,
) -> None:
    path = tmp_path / FILE_NAME
    filled(path, 50_000)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    with closing(History(tmp_path)) as history:
        with pytest.raises(HistoryUnavailable, match="damaged"):
            await asyncio.to_thread(history.points, "B6", 0.0)
        assert await asyncio.to_thread(history.rate_points, "B6", 0.0) == []
        await history.add_points([Point("B6", 1.0, 5, 1)])
        assert await asyncio.to_thread(history.written, 10.0)
        found = await asyncio.to_thread(history.rate_points, "B6", 0.0)
    assert found == [(1.0, 5, 1)]
    assert [a.kind for a in history.alerts(time.time())] == ["history_reset"]


READ_ONLY_CHECK = """
import asyncio, sys, time
from pathlib import Path
from agent.watch.history import History
async def main():
    history = History(Path(sys.argv[1]))
    await history.add_event("deploy", "x", "a deploy")
    await asyncio.to_thread(history.written, 10.0)
    kinds = [e.kind for e in await asyncio.to_thread(history.events, 0.0, 10)]
    history.close()
    print(kinds, [a.kind for a in history.alerts(time.time())])
asyncio.run(main())
"""


def test_a_read_only_history_is_moved_aside_and_a_fresh_history_started(tmp_path: Path) -> None:
    prefix = no_dac_prefix()
    if prefix is None:
        pytest.skip("root here cannot drop its override of file modes")
    path = tmp_path / FILE_NAME
    filled(path, 10)
    path.chmod(0o444)
    done = subprocess.run(
        [*prefix, sys.executable, "-c", READ_ONLY_CHECK, str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['deploy'] ['history_reset']"
    assert len([p for p in tmp_path.glob(f"{FILE_NAME}.corrupt-*") if "-" not in p.name[-4:]]) == 1


@pytest.mark.slow
async def test_pruning_a_huge_history_keeps_its_write_ahead_log_bounded(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    filled(path, 400_000)
    with closing(History(tmp_path, Retention(max_age_s=1e12, max_bytes=1024 * 1024))) as history:
        started = time.monotonic()
        await history.prune_if_due(2_000_000.0)
        queued_s = time.monotonic() - started
        await history.add_points([Point("B1", 1_999_999.0, 1, 1)])
        assert await asyncio.to_thread(history.written, 120.0)
        wal = path.with_name(FILE_NAME + "-wal")
        wal_bytes = wal.stat().st_size if wal.exists() else 0
        found = await asyncio.to_thread(history.rate_points, "B1", 1_999_998.0)
    assert queued_s < 0.1, "pruning is the writer thread's, not the caller's"
    assert wal_bytes <= 1024 * 1024, "the write-ahead log is cut back after pruning"
    assert found == [(1_999_999.0, 1, 1)]


@pytest.mark.slow
async def test_a_daemon_with_a_corrupt_history_answers_detail_and_events_and_raises_one_alert(
    tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_prompts(root / "B1", 10)
    (root / "B1" / "raw_responses.jsonl").write_text(response_line("p0", 10))
    state_dir.mkdir(mode=0o700)
    (state_dir / FILE_NAME).write_bytes(b"\x00garbage, no SQLite here" * 4096)
    async with local_link(state_dir, PipelineConfig(datasets=DatasetsConfig(str(root)))) as link:
        events: EventsList = await link.call(EVENTS_LIST, EventsParams())
        detail: DatasetDetail = await link.call(DATASETS_DETAIL, DetailParams("B1"))
        taken: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    assert "agent_started" in [event.kind for event in events.events]
    assert detail.name == "B1"
    assert [a.kind for a in taken.alerts if a.kind.startswith("history")] == ["history_reset"]
    assert len([p for p in state_dir.glob(f"{FILE_NAME}.corrupt-*") if "-" not in p.name[-4:]]) == 1
    assert "Traceback" not in (state_dir / "agent.log").read_text()


async def test_a_write_sqlite_refuses_is_dropped_alone_and_the_writer_goes_on(
    tmp_path: Path,
) -> None:
    with closing(History(tmp_path)) as history:
        await history.add_points([Point("B1", 1.0, 2**70, 1)])
        await history.add_event("deploy", "x", "after the refused write")
        assert await asyncio.to_thread(history.written, 10.0)
        events = await asyncio.to_thread(history.events, 0.0, 10)
        points = await asyncio.to_thread(history.points, "B1", 0.0)
    assert [event.message for event in events] == ["after the refused write"]
    assert points == []
