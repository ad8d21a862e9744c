"""A restarted agent resumes each dataset file where its scan stopped, unless the file changed.

Each test is two lives of the agent's real parts on real files: a tracker with its keeper and
store scans and stops (keeping its scans as the daemon does), the files are changed or not, and a
new tracker over a new store takes up what was kept. A resume is proven by a change the rescan
would see: the middle of the scanned part (outside the check bytes at its two ends) is made
corrupt in place, so a rescan reports corrupt lines and a resume cannot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.datasets.kept_scan import CHECK_BYTES
from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.tracker import DatasetTracker
from agent.protocol import (
    SNAPSHOT,
    DatasetProgress,
    DatasetsConfig,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
)
from agent.state import StatePaths
from agent.state.health import StateHealth
from agent.watch.scan_store import ScanStore
from tests.support.datasets import response_line, write_prompts
from tests.support.operations import local_link

TOKENS = 40
LINES = 2000


def line(index: int) -> str:
    """A response line of the same length for any index below a million."""
    return response_line(f"p{index:06d}", TOKENS)


def write_responses(folder: Path, lines: int = LINES) -> Path:
    write_prompts(folder, 10)
    path = folder / "raw_responses.jsonl"
    path.write_text("".join(line(i) for i in range(lines)))
    return path


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def life(root: Path, state: Path) -> tuple[DatasetProgress, DatasetTracker]:
    """One life of the agent: a first scan, then its stop (every scan kept, the store closed)."""
    state.mkdir(mode=0o700, exist_ok=True)
    store = ScanStore(state / "scans")
    tracker = DatasetTracker(DatasetsConfig(str(root)), keeper=ScanKeeper(store))
    [progress] = tracker.progress()
    tracker.keep_scans()
    store.close()
    return progress, tracker


def corrupt_the_middle(path: Path, offset: int, fill: bytes = b"#") -> None:
    """Every byte between the two checked ends of the scanned part, bar newlines, made `fill`."""
    with path.open("r+b") as handle:
        handle.seek(CHECK_BYTES)
        middle = handle.read(offset - 2 * CHECK_BYTES)
        handle.seek(CHECK_BYTES)
        handle.write(bytes(b if b == ord("\n") else fill[0] for b in middle))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return write_responses(tmp_path / "root" / "B1")


def test_a_restart_resumes_without_reading_what_was_scanned(tmp_path: Path, dataset: Path) -> None:
    first, tracker = life(dataset.parent.parent, tmp_path / "state")
    offset = tracker._followers["B1"].responses.offset
    corrupt_the_middle(dataset, offset)
    append(dataset, line(LINES))
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert (first.responses, first.corrupt_lines) == (LINES, 0)
    assert (second.responses, second.tokens, second.corrupt_lines) == (
        LINES + 1, (LINES + 1) * TOKENS, 0,
    )  # fmt: skip
    assert second.prompts == 10


def test_a_duplicate_and_a_new_line_appended_while_down_count_once(
    tmp_path: Path, dataset: Path
) -> None:
    _, tracker = life(dataset.parent.parent, tmp_path / "state")
    corrupt_the_middle(dataset, tracker._followers["B1"].responses.offset)
    append(dataset, line(7) + line(LINES) + line(LINES))  # p000007 lies in the checked head
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert (second.responses, second.tokens) == (LINES + 1, (LINES + 1) * TOKENS)
    assert second.corrupt_lines == 0  # resumed, so the ids were the kept ones


def test_a_torn_line_across_the_restart_and_a_corrupt_one_after_it_are_still_told(
    tmp_path: Path, dataset: Path
) -> None:
    append(dataset, line(LINES)[:30])
    first, tracker = life(dataset.parent.parent, tmp_path / "state")
    corrupt_the_middle(dataset, tracker._followers["B1"].responses.offset)
    append(dataset, line(LINES)[30:] + "not json\n")
    second, tracker = life(dataset.parent.parent, tmp_path / "state")
    assert first.responses == LINES
    assert (second.responses, second.corrupt_lines) == (LINES + 1, 1)
    corrupt_at = tracker._followers["B1"].responses.corrupt_offsets
    assert corrupt_at == [dataset.stat().st_size - len("not json\n")]


def test_a_truncated_file_is_read_again(tmp_path: Path, dataset: Path) -> None:
    life(dataset.parent.parent, tmp_path / "state")
    os.truncate(dataset, len(line(0)) * 1500)
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert second.responses == 1500


def test_a_replaced_file_is_read_again(tmp_path: Path, dataset: Path) -> None:
    first, tracker = life(dataset.parent.parent, tmp_path / "state")
    offset = tracker._followers["B1"].responses.offset
    replacement = dataset.with_name("new.jsonl")
    replacement.write_bytes(dataset.read_bytes())
    os.replace(replacement, dataset)
    corrupt_the_middle(dataset, offset)  # same ends: only the inode tells it apart
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert second.corrupt_lines > 0


def test_a_file_rewritten_in_place_is_read_again(tmp_path: Path, dataset: Path) -> None:
    life(dataset.parent.parent, tmp_path / "state")
    inode = dataset.stat().st_ino
    text = dataset.read_text()
    with dataset.open("r+") as handle:  # the first line becomes a duplicate of the second
        handle.write(text.replace(line(0), line(1), 1))
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert dataset.stat().st_ino == inode
    assert second.responses == LINES - 1


@pytest.mark.parametrize(
    "damage",
    ["garbage", "cut", "other code", "ids flipped", "empty"],
)
def test_a_damaged_record_costs_a_rescan_and_one_log_line(
    tmp_path: Path, dataset: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    life(dataset.parent.parent, tmp_path / "state")
    store = ScanStore(tmp_path / "state" / "scans")
    record = store.file_of(str(dataset))
    record.write_bytes(damaged(record.read_bytes(), damage))
    with caplog.at_level(logging.WARNING):
        second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert second.responses == LINES
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "read from byte 0" in warnings[0].getMessage()
    assert warnings[0].exc_info is None


def damaged(data: bytes, how: str) -> bytes:
    head, _, payload = data.partition(b"\n")
    if how == "garbage":
        return b"\x00\xff not a record" * 10
    if how == "cut":
        return data[: len(data) // 2]
    if how == "other code":
        return head.replace(b'"code": "', b'"code": "0') + b"\n" + payload
    if how == "ids flipped":
        return head + b"\n" + payload.replace(b"p000001", b"p000002", 1)
    return b""


def test_a_record_is_not_trusted_for_a_file_that_is_gone(tmp_path: Path, dataset: Path) -> None:
    life(dataset.parent.parent, tmp_path / "state")
    dataset.unlink()
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert (second.responses, second.corrupt_lines) == (0, 0)


def test_the_prompts_file_is_taken_up_too(tmp_path: Path, dataset: Path) -> None:
    prompts = dataset.with_name("prompts.jsonl")
    prompts.write_text("".join(f'{{"id": "q{i:06d}", "prompt": "{"x" * 200}"}}\n'
                               for i in range(2000)))  # fmt: skip
    first, tracker = life(dataset.parent.parent, tmp_path / "state")
    corrupt_the_middle(prompts, tracker._followers["B1"].prompts.offset, fill=b" ")
    second, _ = life(dataset.parent.parent, tmp_path / "state")  # a rescan counts blank lines
    assert first.prompts == second.prompts == 2000


async def test_the_daemon_keeps_its_scans_at_stop_and_resumes_them(
    tmp_path: Path, dataset: Path, state_dir: Path
) -> None:
    config = PipelineConfig(datasets=DatasetsConfig(str(dataset.parent.parent)))
    first = await daemon_life(state_dir, config)
    assert (
        "keeping how far each dataset file was read" in StatePaths(state_dir).daemon_log.read_text()
    )
    corrupt_the_middle(dataset, dataset.stat().st_size)
    append(dataset, line(3) + line(LINES))
    second = await daemon_life(state_dir, None)  # the config it kept
    assert (first.responses, first.corrupt_lines) == (LINES, 0)
    assert (second.responses, second.corrupt_lines) == (LINES + 1, 0)


async def daemon_life(state_dir: Path, config: PipelineConfig | None) -> DatasetProgress:
    """The daemon's first snapshot of the one dataset, then its stop."""
    async with local_link(state_dir, config) as link:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    assert await asyncio.to_thread(stop_daemon, StatePaths(state_dir))
    [progress] = snapshot.datasets
    return progress


def test_a_store_that_cannot_write_costs_an_alert_not_the_scan(
    tmp_path: Path, dataset: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "scans").write_text("a file where the folder goes")
    health = StateHealth(state)
    store = ScanStore(state / "scans", health)
    tracker = DatasetTracker(DatasetsConfig(str(dataset.parent.parent)), keeper=ScanKeeper(store))
    [progress] = tracker.progress()
    assert store.written(timeout_s=10.0)
    store.close()
    assert progress.responses == LINES
    [alert] = health.alerts(0.0)
    assert alert.kind == "state_full"
    assert "scans" in alert.message


def test_records_unused_for_a_month_go_and_used_ones_stay(tmp_path: Path, dataset: Path) -> None:
    life(dataset.parent.parent, tmp_path / "state")
    scans = tmp_path / "state" / "scans"
    [used] = list(scans.iterdir())
    unused = scans / "0123456789abcdef01234567.scan"
    unused.write_bytes(used.read_bytes())
    month_ago = time.time() - 31 * 86400
    for record in (used, unused):
        os.utime(record, (month_ago, month_ago))
    append(dataset, line(LINES))  # the scan moves: the writer starts, and looks for stale ones
    second, _ = life(dataset.parent.parent, tmp_path / "state")
    assert second.responses == LINES + 1
    assert sorted(scans.iterdir()) == [used]
