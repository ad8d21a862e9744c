"""Operation records are bounded: on disk while the daemon runs, and in every snapshot.

700 operations were all carried in every snapshot (263 KB a line) and kept on disk until the
next daemon start.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent.operations.generate import SAVE_EVERY_S, Generate
from agent.operations.journal import Journal
from agent.operations.operations import SHOWN_IN_SNAPSHOT, Operations
from agent.operations.records import KEEP, MAX_STEPS, OperationRecord, OperationStore
from agent.protocol import GenerateParams, JobInfo, LaunchParams, to_wire
from agent.tasks import TaskOwner


def record(number: int, running: bool = False) -> OperationRecord:
    made = OperationRecord(
        f"sequence-{number:05d}", "sequence", f"op {number}", {}, 1000.0 + number
    )
    if not running:
        made.end("done", "ok")
    return made


@pytest.fixture
def operations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Operations:
    box: Any = None
    made = Operations(tmp_path, box, None, TaskOwner("test"), lambda exc: None)  # type: ignore[arg-type]
    monkeypatch.setattr(made, "_spawn", lambda record: None)  # records only: nothing is run
    return made


def test_a_new_operation_prunes_the_ended_records_past_keep(operations: Operations) -> None:
    for number in range(KEEP + 300):
        operations.store.save(record(number))
    operations.resume()
    for number in range(KEEP + 300, KEEP + 360):
        operations._begin(record(number, running=number % 2 == 0))
    on_disk = sorted(path.stem for path in operations.store.folder.glob("*.json"))
    assert len(on_disk) == KEEP + 30, "the ended ones past KEEP go; the 30 under way stay"
    assert on_disk[-1] == f"sequence-{KEEP + 359:05d}"


def test_a_snapshot_carries_those_under_way_then_the_latest_ended_and_no_more(
    operations: Operations,
) -> None:
    for number in range(KEEP):
        operations.store.save(record(number, running=number in (3, 7)))
    operations.resume()
    shown = operations.recent(time.time(), SHOWN_IN_SNAPSHOT)
    assert len(shown) == SHOWN_IN_SNAPSHOT
    ids = [info.id for info in shown]
    assert ids == sorted(ids), "in the order they were recorded, as before"
    assert ids[:2] == ["sequence-00003", "sequence-00007"], "those under way, however old"
    assert ids[2] == f"sequence-{KEEP - SHOWN_IN_SNAPSHOT + 2:05d}", "then the latest ended"
    assert len(operations.recent(time.time())) == KEEP, "a listing asked for still has them all"


class CountingStore(OperationStore):
    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir)
        self.saves = 0

    def save(self, record: OperationRecord) -> None:
        self.saves += 1
        super().save(record)


class QuietAnnouncer:
    def operation(self, info: object) -> None:
        pass

    def event(self, *args: object, **fields: object) -> None:
        pass


class InstantBox:
    """Starts every dataset's run at once, as the one key asks (a retried key: the same run)."""

    def __init__(self) -> None:
        self.started: dict[str, JobInfo] = {}

    async def launch(self, params: LaunchParams, key: str, lineage: object = None) -> JobInfo:
        made = JobInfo(f"run-{params.dataset}", params.job, "inference", "running", ())
        return self.started.setdefault(key, made)


async def test_a_generate_over_3000_datasets_writes_its_record_now_and_then_and_keeps_it_small(
    tmp_path: Path,
) -> None:
    store, box = CountingStore(tmp_path), InstantBox()
    journal = Journal(store, QuietAnnouncer(), lambda exc: None)  # type: ignore[arg-type]
    datasets = tuple(f"D{i:04d}" for i in range(3000))
    made = OperationRecord(
        "generate-1", "generate", "g", to_wire(GenerateParams("run", datasets)), 1.0
    )
    began = time.monotonic()
    await Generate(made, box, journal).run()  # type: ignore[arg-type]
    elapsed_s = time.monotonic() - began
    assert made.state == "done"
    assert made.outcome == "started run on 3000 of 3000 dataset(s)"
    assert len(made.steps) == MAX_STEPS
    assert store.saves <= 3 + elapsed_s / SAVE_EVERY_S, "not once a step (6,000 writes)"
    assert len(box.started) == 3000
    size = (store.folder / "generate-1.json").stat().st_size
    assert size < 400_000, f"{size:,} bytes"
