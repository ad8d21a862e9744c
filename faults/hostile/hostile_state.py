"""Hostile state: a history that misbehaves, and a state folder that is not the agent's own.

History cases, each on a real daemon: another process holds the history's write lock while a
hand-started runner heads past a 300-token budget with `guard = "stop"` (and the same run with
no lock, for the baseline); a history that is no database, one cut in half, one read-only (when
root can drop its override of file modes), and a large one. State folder cases, each through
`python -m agent start`: a shared 1777 folder, a 0777 folder with links planted where the
agent's own files go, and a private folder with the same links.

Checks: snapshots never wait on the history (MAX_SNAPSHOT_S); the guard stops the runner as
far past the budget with the lock as without it (within one round of answers); a damaged
history is one `history_reset` alert and a fresh file, `events.list` and `datasets.detail` are
answered (never `internal`), no traceback in agent.log; the large history's write-ahead log
stays bounded; every hostile folder is refused, left as it was, and nothing is written outside.
"""

from __future__ import annotations

import hashlib
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from agent.watch.history import FILE_NAME
from agent.watch.history_file import JOURNAL_LIMIT_BYTES
from faults.hostile._hostile_state_history import (
    TOKENS_PER_S,
    Seen,
    dataset_root,
    fill_history,
    guard_overrun,
    wal_bytes,
    watch,
)
from faults.result import Scale, ScenarioResult
from tests.support.hostile_files import no_dac_prefix
from tests.support.simulator_process import agent_env

TITLE = "Hostile state: a locked, corrupt, truncated, read-only or huge history; a shared folder"
SIDE = ("-wal", "-shm", "-journal")
MAX_SNAPSHOT_S = 2.0
MAX_WAL_BYTES = 2 * JOURNAL_LIMIT_BYTES
"""The log is cut back to its limit at each checkpoint; between two it grows by what was written."""
MAX_FIRST_SNAPSHOT_S = 5.0
"""From `attach` to the first snapshot, whatever the history holds."""
OVERRUN_SLACK = int(MAX_SNAPSHOT_S * TOKENS_PER_S)
"""How much further past the budget the locked run may go than the baseline: what the runner
writes in MAX_SNAPSHOT_S (a scan later). The old agent's 10 s waits on the lock cost 5 times it."""
PLANTED = ("agent.log", "audit.jsonl", "idempotency.jsonl", "daemon.lock", "start.lock",
           FILE_NAME)  # fmt: skip


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The guard under a locked history, the damaged histories, then the hostile folders."""
    result = ScenarioResult("hostile_state", TITLE, seed)
    await _guard_cases(workdir / "guard", result)
    for name, damage in _damages(scale):
        await _damaged_case(workdir / name, name, damage, result)
    _folder_cases(workdir / "folders", result)
    return result


async def _guard_cases(workdir: Path, result: ScenarioResult) -> None:
    baseline, _ = await guard_overrun(workdir / "baseline", locked=False)
    locked, seen = await guard_overrun(workdir / "locked", locked=True)
    result.faults += 1
    result.attempted += 2
    if baseline is None or locked is None:
        result.violate(f"the guard did not stop the runner (overrun {baseline} / {locked})")
        return
    result.acknowledged += 2
    result.notes.append(
        f"guard overrun past a {300}-token budget: {baseline} tokens without the lock, {locked} "
        f"with another process holding the history's write lock; snapshots while locked "
        f"{_spread(seen.snapshot_s)}; alerts {sorted(seen.alerts & {'history_stalled'})}"
    )
    if locked > baseline + OVERRUN_SLACK:
        result.violate(f"the locked history let the runner go {locked} tokens past its budget")
    _check_snapshots("locked history", seen, result)


Damage = Callable[[Path], None] | int
"""What is done to the history before the daemon starts: a function, or that many points."""


def _damages(scale: Scale) -> list[tuple[str, Damage]]:
    cases: list[tuple[str, Damage]] = [("corrupt", _corrupt), ("truncated", _truncated)]
    if no_dac_prefix() is not None:
        cases.append(("read_only", _read_only))
    cases.append(("large", scale.pick(6_000_000, 600_000)))
    return cases


def _corrupt(path: Path) -> None:
    path.write_bytes(b"\x00not SQLite at all\n" * 50_000)


def _truncated(path: Path) -> None:
    fill_history(path, 60_000)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _read_only(path: Path) -> None:
    fill_history(path, 1000)
    path.chmod(0o444)


async def _damaged_case(workdir: Path, name: str, damage: Damage, result: ScenarioResult) -> None:
    state_dir = workdir / "state"
    state_dir.mkdir(parents=True, mode=0o700)
    history = state_dir / FILE_NAME
    if isinstance(damage, int):
        fill_history(history, damage, leave_log=True)
    else:
        damage(history)
    result.faults += 1
    result.attempted += 1
    size_mb = sum(p.stat().st_size for p in state_dir.glob(f"{FILE_NAME}*")) / 1e6
    python = _without_dac(workdir) if name == "read_only" else None
    seen = await watch(state_dir, dataset_root(workdir), looks=20, python=python)
    result.acknowledged += 1
    aside = [p for p in state_dir.glob(f"{FILE_NAME}.corrupt-*") if not p.name.endswith(SIDE)]
    result.notes.append(
        f"{name} history ({size_mb:.0f} MB): first snapshot after {seen.first_snapshot_s:.2f} s, "
        f"snapshots {_spread(seen.snapshot_s)}, answers {seen.answers}, alerts "
        f"{sorted(a for a in seen.alerts if a.startswith('history'))}, {len(aside)} moved aside, "
        f"WAL at most {seen.wal_peak_bytes / 1e6:.1f} MB, {wal_bytes(state_dir) / 1e6:.1f} MB "
        f"after, peak RSS {seen.rss_mb:.0f} MB, "
        f"stopped in {seen.stop_s:.1f} s"
    )
    _check_snapshots(f"{name} history", seen, result)
    _check_damaged(name, seen, len(aside), seen.wal_peak_bytes, result)
    if seen.first_snapshot_s > MAX_FIRST_SNAPSHOT_S:
        result.violate(
            f"{name} history: the first snapshot came after {seen.first_snapshot_s:.1f} s"
        )


def _without_dac(workdir: Path) -> str:
    """An interpreter for the agent under which root cannot write a read-only file."""
    wrapper = workdir / "python-without-dac"
    wrapper.write_text(f'#!/bin/sh\nexec {" ".join(no_dac_prefix() or [])} {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _check_damaged(name: str, seen: Seen, aside: int, wal: int, result: ScenarioResult) -> None:
    internal = [method for method, code in seen.answers.items() if code == "internal"]
    if internal:
        result.violate(f"{name} history: {internal} answered internal")
    if seen.tracebacks:
        result.violate(f"{name} history: {seen.tracebacks} tracebacks in agent.log")
    if name != "large" and (aside != 1 or "history_reset" not in seen.alerts):
        result.violate(f"{name} history: {aside} files moved aside, alerts {sorted(seen.alerts)}")
    if name != "large":
        result.repaired += aside
    if wal > MAX_WAL_BYTES:
        result.violate(f"{name} history: its write-ahead log grew to {wal:,} bytes")


def _check_snapshots(case: str, seen: Seen, result: ScenarioResult) -> None:
    slowest = max(seen.snapshot_s, default=0.0)
    result.detection_s.append(slowest)
    if slowest > MAX_SNAPSHOT_S:
        result.violate(f"{case}: a snapshot took {slowest:.1f} s")


def _folder_cases(workdir: Path, result: ScenarioResult) -> None:
    outside = workdir / "outside"
    outside.mkdir(parents=True)
    targets = {name: outside / f"{name}.target" for name in PLANTED}
    for target in targets.values():
        target.write_bytes(b"not the agent's\n")
    before = _fingerprint(outside)
    for name, mode, planted in (("shared", 0o1777, False), ("open", 0o777, True),
                                ("private", 0o700, True)):  # fmt: skip
        folder = workdir / name
        folder.mkdir()
        folder.chmod(mode)
        if planted:
            for entry, target in targets.items():
                (folder / entry).symlink_to(target)
        _refused(folder, mode, result)
    written = sum(1 for path, digest in _fingerprint(outside).items() if before.get(path) != digest)
    result.lost += written
    result.notes.append(f"hostile state folders: 3 tried, files written outside: {written}")


def _refused(folder: Path, mode: int, result: ScenarioResult) -> None:
    result.faults += 1
    result.attempted += 1
    done = subprocess.run(
        [sys.executable, "-m", "agent", "start", "--state-dir", str(folder)],
        env=agent_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 1 or "state directory" not in done.stderr:
        result.violate(f"{folder.name} folder ({mode:o}): start exited {done.returncode}")
        subprocess.run([sys.executable, "-m", "agent", "stop", "--state-dir", str(folder)],
                       env=agent_env(), capture_output=True, timeout=60, check=False)  # fmt: skip
        return
    result.acknowledged += 1
    if folder.stat().st_mode & 0o7777 != mode:
        result.violate(f"{folder.name} folder: its mode was changed from {mode:o}")


def _fingerprint(folder: Path) -> dict[Path, str]:
    return {
        path: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in folder.rglob("*") if path.is_file()
    }  # fmt: skip


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    return f"p50 {statistics.median(values):.3f} s, max {max(values):.3f} s"
