"""The agent's history: kept with no console attached, through a SIGKILL, and across restarts."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.host.signals import kill_process
from agent.protocol import SNAPSHOT, DatasetsConfig, PipelineConfig, Snapshot, SnapshotParams
from agent.state import StatePaths, read_json
from agent.watch.history import FILE_NAME, History, Point, Retention, connect, prune, used_bytes
from console.link.local_link import open_local_link
from tests.support.datasets import response_line, write_prompts
from tests.support.operations import local_link
from tests.support.waits import until


def rows(db_path: Path, query: str) -> list[tuple[object, ...]]:
    """Read the history as another process would, through its own connection."""
    if not db_path.exists():
        return []
    with sqlite3.connect(db_path, timeout=10) as db:
        try:
            return db.execute(query).fetchall()
        except sqlite3.OperationalError:  # the tables are not made yet
            return []


class Appender:
    """Appends one response a tick to a dataset, as a runner would."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "raw_responses.jsonl"
        self.count = 0

    async def run(self, every_s: float = 0.1) -> None:
        while True:
            with self.path.open("a") as handle:
                handle.write(response_line(f"p{self.count}", 10))
            self.count += 1
            await asyncio.sleep(every_s)


def one_dataset(tmp_path: Path) -> tuple[PipelineConfig, Path]:
    root = tmp_path / "datasets"
    write_prompts(root / "B1_chat", 100_000)
    config = PipelineConfig(datasets=DatasetsConfig(str(root), budget=200))
    return config, root / "B1_chat"


@pytest.mark.slow
async def test_with_no_console_attached_history_keeps_points_and_events_and_seeds_rates(
    tmp_path: Path, state_dir: Path
) -> None:
    config, folder = one_dataset(tmp_path)
    link = await open_local_link(state_dir, config)
    await link.close()  # from here on, no console is attached
    db = state_dir / FILE_NAME
    appending = asyncio.create_task(Appender(folder).run())
    try:
        await until(lambda: len(rows(db, "SELECT ts FROM points")) >= 3, "points, unwatched")
        await until(
            lambda: rows(db, "SELECT 1 FROM events WHERE kind = 'budget_reached'") != [],
            "the budget reached, unwatched",
        )
        await until(  # over budget once past its 2 % tolerance: a later scan than the budget's
            lambda: rows(db, "SELECT 1 FROM events WHERE kind = 'alert_raised'") != [],
            "an alert raised, unwatched",
        )
    finally:
        appending.cancel()
    kinds = {kind for (kind,) in rows(db, "SELECT kind FROM events")}
    assert {"agent_started", "budget_reached", "alert_raised"} <= kinds
    stop_daemon(StatePaths(state_dir))
    async with local_link(state_dir, config) as link:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    rate = snapshot.datasets[0].tokens_per_s
    assert rate is not None, "a restarted agent has its rates from the history at once"
    assert rate > 0


@pytest.mark.slow
async def test_a_sigkilled_daemon_leaves_a_history_that_opens_with_every_point_it_wrote(
    tmp_path: Path, state_dir: Path
) -> None:
    config, folder = one_dataset(tmp_path)
    link = await open_local_link(state_dir, config)
    await link.close()
    db = state_dir / FILE_NAME
    appending = asyncio.create_task(Appender(folder).run(every_s=0.02))
    try:
        await until(lambda: len(rows(db, "SELECT ts FROM points")) >= 4, "points being written")
        written = rows(db, "SELECT MAX(ts), COUNT(*) FROM points")[0]
        kill_process(int(read_json(state_dir / "daemon.json")["pid"]), signal.SIGKILL)
    finally:
        appending.cancel()
    (state_dir / "daemon.json").unlink()
    with sqlite3.connect(db) as opened:
        assert opened.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        latest, count = opened.execute("SELECT MAX(ts), COUNT(*) FROM points").fetchone()
    assert latest >= written[0]
    assert count >= written[1]


async def test_points_are_read_back_oldest_first(tmp_path: Path) -> None:
    with closing(History(tmp_path)) as history:
        await history.add_points([Point("B1", 20.0, 200, 2), Point("B1", 10.0, 100, 1)])
        await history.add_points([Point("B2", 15.0, 5, 1)])
        await history.add_event("deploy", "/x/runner.py", "deploy of /x/runner.py", asked_by="me")
        found = await asyncio.to_thread(history.rate_points, "B1", 0.0)
        events = await asyncio.to_thread(history.events, 0.0, 10)
    assert found == [(10.0, 100, 1), (20.0, 200, 2)]
    assert [(e.kind, e.detail) for e in events] == [("deploy", {"asked_by": "me"})]


async def test_the_token_curve_is_thinned_to_its_limit_and_keeps_the_latest_point(
    tmp_path: Path,
) -> None:
    with closing(History(tmp_path)) as history:
        await history.add_points([Point("B1", float(ts), ts * 10, ts) for ts in range(1, 101)])
        curve = await asyncio.to_thread(history.token_curve, "B1", 0.0, 7)
        short = await asyncio.to_thread(history.token_curve, "B1", 95.0, 7)
    assert len(curve) <= 7
    assert (curve[0].ts, curve[-1].ts, curve[-1].tokens) == (1.0, 100.0, 1000)
    assert [p.ts for p in curve] == sorted(p.ts for p in curve)
    assert [p.tokens for p in short] == [950, 960, 970, 980, 990, 1000]


def test_retention_thins_old_points_to_one_a_minute_and_drops_what_is_too_old(
    tmp_path: Path,
) -> None:
    now = 100 * 24 * 3600.0
    db = connect(tmp_path / FILE_NAME)
    hour_ago = now - 3600
    old = [("B1", hour_ago - 600 + step, step, step) for step in range(0, 300, 5)]
    recent = [("B1", now - 60 + step, step, step) for step in range(0, 60, 5)]
    ancient = [("B1", now - 40 * 24 * 3600.0, 1, 1)]
    with db:
        db.executemany("INSERT INTO points VALUES (?,?,?,?)", old + recent + ancient)
    with db:
        prune(db, now, Retention(max_age_s=30 * 24 * 3600.0))
    kept = [ts for (ts,) in db.execute("SELECT ts FROM points ORDER BY ts")]
    db.close()
    assert [ts for ts in kept if ts >= now - 60] == [ts for _, ts, _, _ in recent]
    old_kept = [ts for ts in kept if ts < now - 60]
    assert len({int(ts // 60) for ts in old_kept}) == len(old_kept) == 5
    assert min(kept) > now - 30 * 24 * 3600.0


def test_retention_keeps_the_database_under_its_size_limit(tmp_path: Path) -> None:
    db = connect(tmp_path / FILE_NAME)
    points = [(f"B{i % 50}", float(i), i, i) for i in range(60_000)]
    with db:
        db.executemany("INSERT INTO points VALUES (?,?,?,?)", points)
    with db:
        prune(db, 60_000.0, Retention(max_age_s=1e9, max_bytes=512 * 1024))
    assert used_bytes(db) <= 512 * 1024
    newest = db.execute("SELECT MAX(ts) FROM points").fetchone()[0]
    db.close()
    assert newest == 59_999.0
