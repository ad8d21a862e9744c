"""Binaries and files the config names, and a boot id that reads empty.

(a) `nvidia_smi` stand-ins that hang, flood stdout, or answer garbage rows then 20,000 rows,
read as the GPU probe reads them. Checks: each reading ends within the probe's deadline with a
note, the stand-in and any child it left are gone, and this process's peak memory stays flat
(one flood once took the daemon to 880 MB; six hung copies were left behind).
(b) `api_key_file` as a FIFO, /dev/zero and a 300 MB file. Checks: each is refused within
KEY_LIMIT_S, unread, with a reason (a FIFO blocked the probe and the runner for good).
(c) Live processes recorded under this boot while /proc's boot id reads empty, as in some
container runtimes. Checks: none is taken for lost (the leftover sweep killed healthy jobs).
detection_s is how long each hostile reading took.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

from agent.host import procfs
from agent.host.procfs import boot_id, start_ticks
from agent.host.sglang_auth import ApiKeyError, read_api_key
from agent.host.signals import is_running
from agent.jobs.supervisor import _state as job_state
from agent.probes import gpus
from agent.probes.gpus import read_gpus
from faults.harness.memory import own_peak_mb
from faults.result import Scale, ScenarioResult
from tests.support.waits import wait_until_blocking

TITLE = "Hostile nvidia-smi and key files, and a boot id that reads empty"

GROWTH_LIMIT_MB = 100.0
PROBE_DEADLINE_S = 1.0
"""The GPU probe's deadline here (TIMEOUT_S in the agent), so a hang's trials are quick."""
KEY_LIMIT_S = 2.0
STAND_INS = {
    "hang": "time.sleep(600)",
    "flood": "chunk = b'x' * 65536\nwhile True: sys.stdout.buffer.write(chunk)",
    "garbage": "print('²\\x1b[2J, GPU-b, x, 1, 2, 3, 4, 5\\nnot, a, gpu')",
    "rows": "for i in range(20_000): print(f'{i % 64}, GPU-{i}, H100, 1, 2, 3, 4, 5')",
    "orphan": "import subprocess\nsubprocess.Popen(['sleep', '600'])\ntime.sleep(600)",
}
"""Each stand-in's body; `orphan` leaves a child in the background and hangs."""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """The three parts, the stand-ins `trials` times each."""
    result = ScenarioResult("peer_binaries", TITLE, seed)
    before = own_peak_mb()
    saved = gpus.TIMEOUT_S
    gpus.TIMEOUT_S = PROBE_DEADLINE_S
    try:
        for trial in range(scale.pick(full=5, quick=1)):
            for name, body in STAND_INS.items():
                await _stand_in(workdir / f"{name}-{trial}", name, body, result)
    finally:
        gpus.TIMEOUT_S = saved
    grown = own_peak_mb() - before
    result.notes.append(f"nvidia-smi stand-ins: this process's peak memory grew {grown:.0f} MB")
    if grown > GROWTH_LIMIT_MB:
        result.violate(f"peak memory grew {grown:.0f} MB reading the stand-ins")
    _key_files(workdir / "keys", result)
    _empty_boot_id(workdir, result, scale.pick(full=20, quick=4))
    return result


async def _stand_in(folder: Path, name: str, body: str, result: ScenarioResult) -> None:
    folder.mkdir(parents=True)
    script = folder / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\nimport os, sys, time\n"
        f"open({str(folder / 'pid')!r}, 'w').write(str(os.getpid()))\n{body}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    result.faults += 1
    result.attempted += 1
    started = time.monotonic()
    reading = await read_gpus(str(script))
    took = time.monotonic() - started
    result.detection_s.append(took)
    left = [pid for pid in _pids_of(folder) if is_running(pid)]
    problems = []
    if not reading.note:
        problems.append("no note")
    if took > PROBE_DEADLINE_S + 2.0:
        problems.append(f"the reading took {took:.1f} s")
    if left:
        problems.append(f"left running: {left}")
    if problems:
        result.violate(f"nvidia-smi {name}: {'; '.join(problems)}")
        return
    result.acknowledged += 1


def _pids_of(folder: Path) -> list[int]:
    """The stand-in's pid, and its children's (found by their parent in /proc)."""
    pid = int((folder / "pid").read_text())
    wait_until_blocking(lambda: not is_running(pid), 5, 0.02)
    children = subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True, text=True)
    mine = [int(p) for p in children.stdout.split() if _parent(int(p)) in (pid, 1)]
    return [pid, *[p for p in mine if _started_by(p, folder)]]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _started_by(pid: int, folder: Path) -> bool:
    """True for a `sleep 600` whose process group is the stand-in's (its leader's pid)."""
    try:
        return os.getpgid(pid) == int((folder / "pid").read_text())
    except (OSError, ValueError):
        return False


def _key_files(folder: Path, result: ScenarioResult) -> None:
    folder.mkdir(parents=True)
    fifo, huge = folder / "fifo", folder / "huge"
    os.mkfifo(fifo)
    with huge.open("wb") as handle:
        handle.truncate(300 * 2**20)  # sparse
    for path in (fifo, Path("/dev/zero"), huge):
        result.faults += 1
        result.attempted += 1
        started = time.monotonic()
        try:
            read_api_key(path)
        except ApiKeyError as exc:
            took = time.monotonic() - started
            result.detection_s.append(took)
            if took <= KEY_LIMIT_S and str(exc).startswith(f"API key file {path}"):
                result.acknowledged += 1
                continue
            result.violate(f"key file {path}: refused after {took:.1f} s: {exc}")
            continue
        result.violate(f"key file {path}: read as a key")


def _empty_boot_id(workdir: Path, result: ScenarioResult, count: int) -> None:
    recorded = boot_id() or "recorded-boot"
    children = [subprocess.Popen(["sleep", "600"]) for _ in range(count)]
    saved = procfs.boot_id
    procfs.boot_id = lambda: ""  # type: ignore[assignment]
    try:
        for child in children:
            ticks = start_ticks(child.pid)
            record = {"pid": child.pid, "start_ticks": ticks, "boot_id": recorded}
            result.faults += 1
            result.attempted += 1
            state = job_state(False, record, None, None, None)[0]
            if state == "lost":
                result.violate(f"a live process ({child.pid}) was taken for lost")
            else:
                result.acknowledged += 1
    finally:
        procfs.boot_id = saved
        for child in children:
            child.kill()
            child.wait()
    result.notes.append(f"boot id read empty: {count} live processes, none taken for lost")
    del workdir
