"""Free space where the datasets live: warn before a writer fills the disk, and say when one did.

`low_disk`: on each filesystem holding datasets that are being written, free space below what
those writers will need within the next hour at their current rate (tokens/s times the bytes a
token takes in that dataset's file), or below a floor however slow they are. `disk_full` (or
`write_failed` for an I/O error): a runner stopped because it could not write, from its
runner.json. Reads only: statvfs and the runner's status.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent.datasets.runner_status import RunView
from agent.protocol import Alert, DatasetProgress

HORIZON_S = 3600.0
"""How far ahead the writers' need is counted."""


@dataclass(frozen=True, slots=True)
class DatasetDisk:
    """One dataset as the disk check sees it."""

    progress: DatasetProgress
    folder: Path
    file_bytes: int
    """Bytes of its responses file read so far: with its tokens, the bytes one token takes."""

    @property
    def bytes_per_s(self) -> float:
        """How fast its writer fills the disk now (0 when nobody writes it)."""
        progress = self.progress
        if not progress.writer_active or not progress.tokens or not progress.tokens_per_s:
            return 0.0
        return progress.tokens_per_s * self.file_bytes / progress.tokens


def low_disk_alerts(datasets: Iterable[DatasetDisk], floor_bytes: int, now: float) -> list[Alert]:
    """One `low_disk` warning per filesystem whose writers will run out of room within the hour."""
    by_device: dict[int, list[DatasetDisk]] = {}
    for item in datasets:
        if item.progress.writer_active:  # nobody writes it: it needs no room
            with contextlib.suppress(OSError):
                by_device.setdefault(os.stat(item.folder).st_dev, []).append(item)
    alerts = [_low_disk(writing, floor_bytes, now) for writing in by_device.values()]
    return [alert for alert in alerts if alert is not None]


def _low_disk(writing: list[DatasetDisk], floor_bytes: int, now: float) -> Alert | None:
    try:
        stats = os.statvfs(writing[0].folder)
    except OSError:
        return None
    free = stats.f_bavail * stats.f_frsize
    rate = sum(item.bytes_per_s for item in writing)
    need = rate * HORIZON_S
    if free >= max(need, floor_bytes):
        return None
    names = ", ".join(item.progress.name for item in writing)
    left = (
        f"full in ~{_duration(free / rate)} at {size_text(rate)}/s" if rate > 0 else "no rate yet"
    )
    return Alert(
        "low_disk", "warning",
        f"{size_text(free)} free where {names} {'is' if len(writing) == 1 else 'are'} being written "
        f"({writing[0].folder.parent}): {left}; the next hour needs {size_text(need)}, the floor is "
        f"{size_text(floor_bytes)}. Free space before the runner stops on a full disk",
        names, now,
    )  # fmt: skip


def write_failed_alert(name: str, run: RunView | None, now: float) -> Alert | None:
    """`disk_full` (or `write_failed`) when the last run of `name` stopped for a failed write."""
    if run is None or run.active or run.write_error is None:
        return None
    kind = "disk_full" if run.write_disk_full else "write_failed"
    return Alert(
        kind, "error",
        f"{name}: its runner stopped because it could not write: {run.write_error}. Every record "
        "written is kept; free space (or fix the device), then start it again (g): it resumes "
        "exactly where it stopped",
        name, now,
    )  # fmt: skip


def free_bytes(folder: Path) -> int | None:
    """Free bytes of the filesystem `folder` is (or will be) on: its nearest existing parent's.

    None when not even the root can be asked.
    """
    for path in (folder, *folder.parents):
        try:
            stats = os.statvfs(path)
        except OSError:
            continue
        return stats.f_bavail * stats.f_frsize
    return None


def size_text(count: float) -> str:
    """Bytes in the largest binary unit that keeps one or more of them: 1.2 TiB, 640.0 GiB."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:.0f} B"


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{max(1, round(seconds / 60))} min"
