"""low_disk before a writer fills its filesystem; disk_full once a runner stopped for it."""

from __future__ import annotations

import os
from pathlib import Path

from agent.datasets.disk_space import HORIZON_S, DatasetDisk, low_disk_alerts
from agent.protocol import DatasetProgress
from tests.support.small_fs import small_tmpfs


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def writing(name: str, tokens_per_s: float, active: bool = True) -> DatasetProgress:
    return DatasetProgress(
        name, prompts=100, responses=10, tokens=1000, budget=None, tokens_per_s=tokens_per_s,
        writer_active=active,
    )  # fmt: skip


def test_writers_that_need_more_than_the_free_space_within_the_hour_raise_low_disk(
    tmp_path: Path,
) -> None:
    for name in ("B1", "B2"):
        (tmp_path / name).mkdir()
    free = free_bytes(tmp_path)
    # 1,000 tokens took 10,000 bytes on disk: 10 bytes a token.
    per_writer_tokens_per_s = free / HORIZON_S / 10 * 0.6  # the two together need 120 % of free
    both = [
        DatasetDisk(writing("B1", per_writer_tokens_per_s), tmp_path / "B1", 10_000),
        DatasetDisk(writing("B2", per_writer_tokens_per_s), tmp_path / "B2", 10_000),
    ]

    [alert] = low_disk_alerts(both, floor_bytes=0, now=1.0)

    assert (alert.kind, alert.severity, alert.subject) == ("low_disk", "warning", "B1, B2")
    assert "full in ~" in alert.message
    assert low_disk_alerts(both[:1], floor_bytes=0, now=1.0) == [], "one alone needs 60 %"
    idle = [DatasetDisk(writing("B1", 10**12, active=False), tmp_path / "B1", 10_000)]
    assert low_disk_alerts(idle, floor_bytes=free * 2, now=1.0) == [], "nobody writes: no need"


def test_a_slow_writer_on_a_nearly_full_filesystem_is_below_the_floor(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "mnt", size_kib=1024) as mount:
        (mount.path / "B1").mkdir()
        mount.fill(leave_bytes=64 * 1024)
        slow = [DatasetDisk(writing("B1", 0.001), mount.path / "B1", 10_000)]

        [alert] = low_disk_alerts(slow, floor_bytes=1 << 20, now=1.0)

        assert "KiB free where B1 is being written" in alert.message
        assert "the floor is 1.0 MiB" in alert.message
        assert low_disk_alerts(slow, floor_bytes=1024, now=1.0) == []
