"""The runner's disk fills up mid-append, again and again; space comes back; it resumes exactly.

The dataset lives on a small tmpfs (a real filesystem that really fills: ENOSPC) where root may
mount one; elsewhere RLIMIT_FSIZE stands in (EFBIG: the same write path, and said so in the
notes). Each cycle runs the real runner until the disk is full, then grows the filesystem by a
random amount and runs it again, until the dataset is done. The agent's dataset tracker watches
the folder the whole time, as the daemon would.

Checks after every stop: exit code 5 and one line saying why; runner.json says write_failed and
the errno; the file ends at a newline (the partial line was cut back, so resume has nothing to
move aside) and every line is a whole record; the agent raised `disk_full` for it, and `low_disk`
before it (tmpfs only: the writers' rate against the free space). At the end every prompt is
in the dataset exactly once and every record seen after a stop is still there.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import resource
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent.datasets.tracker import DatasetTracker
from agent.protocol import DatasetsConfig
from faults.harness.responses import ResponsesFollower, read_final, write_prompts
from faults.result import Scale, ScenarioResult
from tests.support.runner_files import (
    dataset_alerts,
    runner_command,
    status,
    write_stop_problems,
)
from tests.support.simulator_process import agent_env, running_simulator
from tests.support.small_fs import SmallFs, tmpfs_or_none

TITLE = "Runner's disk full mid-append (ENOSPC), space freed, resumed"

SIMULATOR_ARGS = ("--speed", "100", "--mean-tokens", "200", "--sd-tokens", "120")
PROMPTS_PER_CYCLE = 60
RUN_TIMEOUT_S = 120.0
POLL_S = 0.05


@dataclass
class Cycles:
    """What the cycles saw, for the checks and the notes."""

    acknowledged: set[str] = field(default_factory=set)
    low_disk_lead_s: list[float] = field(default_factory=list)
    cut_bytes: int = 0
    errnos: dict[str, int] = field(default_factory=dict)


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(25, 4)` times full, then a last run with room to finish."""
    result = ScenarioResult("disk_full", TITLE, seed)
    await asyncio.to_thread(_run, scale.pick(25, 4), workdir, random.Random(seed), result)
    return result


def _run(stops: int, workdir: Path, rng: random.Random, result: ScenarioResult) -> None:
    with (
        running_simulator(workdir / "sim", *SIMULATOR_ARGS, "--seed", str(result.seed)) as sim,
        tmpfs_or_none(workdir / "mnt", size_kib=96) as mounted,
    ):
        if isinstance(mounted, SmallFs):
            _cycles(stops, mounted.path, sim.url, _TmpfsRoom(mounted, rng), workdir, result)
        else:
            result.notes.append(f"no tmpfs ({mounted}): RLIMIT_FSIZE (EFBIG) stood in for ENOSPC")
            _cycles(stops, workdir / "data", sim.url, _SizeLimit(rng), workdir, result)


class _TmpfsRoom:
    """A tmpfs that grows by a random amount after each stop."""

    def __init__(self, fs: SmallFs, rng: random.Random) -> None:
        self.fs, self.rng, self.size_kib = fs, rng, 96
        self.errno = "ENOSPC"

    def grow(self, final: bool) -> None:
        self.size_kib += 8192 if final else self.rng.randint(24, 96)
        self.fs.resize(self.size_kib)

    def limit(self) -> Callable[[], None] | None:
        return None


class _SizeLimit:
    """RLIMIT_FSIZE on the runner, raised by a random amount after each stop."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.bytes = rng, 96 * 1024
        self.errno = "EFBIG"

    def grow(self, final: bool) -> None:
        self.bytes += 64 << 20 if final else self.rng.randint(24, 96) * 1024

    def limit(self) -> Callable[[], None] | None:
        size = self.bytes
        return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def _cycles(
    stops: int, root: Path, url: str, room: _TmpfsRoom | _SizeLimit, workdir: Path,
    result: ScenarioResult,
) -> None:  # fmt: skip
    folder = root / "B1_full"
    folder.mkdir(parents=True)
    prompts = write_prompts(folder / "prompts.jsonl", PROMPTS_PER_CYCLE * (stops + 1))
    follower, seen = ResponsesFollower(folder / "raw_responses.jsonl"), Cycles()
    for cycle in range(stops + 1):
        final = cycle == stops
        code, stopped_at, lead = _one_run(folder, url, room, workdir / f"run-{cycle}.log", result)
        _check_stop(folder, code, stopped_at, lead, room.errno, final, f"run {cycle}", seen, result)
        observed = follower.observe()
        seen.acknowledged.update(observed.new_ids)
        result.corrupt += len(observed.bad_offsets)
        if observed.torn_tail:
            result.violate(f"run {cycle}: left {len(observed.torn_tail)} bytes of a partial line")
        if code == 0:
            break
        room.grow(final=cycle + 1 == stops)
    _check_final(folder, prompts, seen, isinstance(room, _TmpfsRoom), result)


def _one_run(
    folder: Path, url: str, room: _TmpfsRoom | _SizeLimit, log: Path, result: ScenarioResult
) -> tuple[int, float, float | None]:
    """(exit code, when it stopped, seconds between the first low_disk and the stop).

    Also times the resume: from the start to the first new byte on disk (recovery_s).
    """
    tracker = DatasetTracker(DatasetsConfig(str(folder.parent), low_disk_floor_bytes=0))
    responses = folder / "raw_responses.jsonl"
    size_before = responses.stat().st_size if responses.exists() else 0
    started, warned_at, resumed = time.monotonic(), None, size_before == 0
    with _runner(folder, url, log, room.limit()) as runner:
        while runner.poll() is None:
            if warned_at is None and dataset_alerts(tracker, "low_disk", folder.name):
                warned_at = time.monotonic()
            if not resumed and responses.stat().st_size > size_before:
                result.recovery_s.append(time.monotonic() - started)
                resumed = True
            time.sleep(POLL_S)
    stopped_at = time.monotonic()
    return runner.returncode, stopped_at, stopped_at - warned_at if warned_at else None


@contextlib.contextmanager
def _runner(
    folder: Path, url: str, log: Path, limit: Callable[[], None] | None
) -> Iterator[subprocess.Popen[bytes]]:
    """The runner, its log kept off the full disk."""
    with log.open("wb") as output:
        runner = subprocess.Popen(
            runner_command(folder, url, "--concurrency", "8"), env=agent_env(),
            stdout=output, stderr=output, preexec_fn=limit,
        )  # fmt: skip
    try:
        yield runner
        runner.wait(timeout=RUN_TIMEOUT_S)
    finally:
        runner.kill()
        runner.wait()


def _check_stop(
    folder: Path, code: int, stopped_at: float, lead: float | None, errno_name: str, final: bool,
    run: str, seen: Cycles, result: ScenarioResult,
) -> None:  # fmt: skip
    if code == 0:
        if not final:
            result.notes.append(f"{run}: finished the dataset before the disk filled")
        return
    result.faults += 1
    for problem in write_stop_problems(folder, code, errno_name):
        result.violate(f"{run}: {problem}")
    error = status(folder).get("write_error") or {}
    seen.errnos[str(error.get("errno"))] = seen.errnos.get(str(error.get("errno")), 0) + 1
    if "cut a partial line of" in str(error.get("detail")):
        seen.cut_bytes += 1
    tracker = DatasetTracker(DatasetsConfig(str(folder.parent)))
    if dataset_alerts(tracker, "disk_full", folder.name):
        result.detection_s.append(time.monotonic() - stopped_at)
    else:
        result.violate(f"{run}: the agent raised no disk_full alert")
    if lead is not None:
        seen.low_disk_lead_s.append(lead)


def _check_final(
    folder: Path, prompts: list[str], seen: Cycles, expect_low_disk: bool, result: ScenarioResult
) -> None:
    final = read_final(folder / "raw_responses.jsonl")
    result.attempted, result.acknowledged = len(prompts), len(seen.acknowledged)
    result.lost = len(seen.acknowledged - final.ids.keys())
    result.duplicated = sum(count - 1 for count in final.ids.values())
    result.corrupt += final.corrupt_lines
    if set(final.ids) != set(prompts):
        result.violate(f"the dataset never finished: {len(set(prompts) - set(final.ids))} missing")
    torn = folder / "raw_responses.torn"
    if torn.exists() and torn.stat().st_size:
        result.violate(f"resume had torn tails to move ({torn.stat().st_size} bytes)")
    result.notes.append(
        f"stops: {result.faults} ({seen.errnos}); {seen.cut_bytes} of them cut a partial line back "
        "to the last newline (the rest failed on a whole record); detect_s: from the runner's exit "
        "to the agent's disk_full alert; recover_s: from restarting it, space freed, to its first new record"
    )
    if seen.low_disk_lead_s:
        leads = sorted(seen.low_disk_lead_s)
        result.notes.append(
            f"low_disk came before {len(leads)} of {result.faults} stops, "
            f"{leads[len(leads) // 2]:.2f} s (p50) ahead at this tiny filesystem's fill rate"
        )
    elif expect_low_disk and result.faults:
        result.violate("the agent never warned low_disk before the disk filled")
