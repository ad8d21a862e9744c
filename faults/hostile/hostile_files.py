"""Hostile files under the datasets root: the agent keeps serving, with sane numbers.

A real daemon watches a root that holds one live dataset (a writer appends a response every
few milliseconds) and one of each hostile thing: a FIFO as the responses file and as the
prompts file, a link to /dev/zero, a unix socket, a symlink loop, a folder the daemon may not
enter (it runs without CAP_DAC_OVERRIDE, as a non-root user would), runner.json as a FIFO, nested
100,000 deep and with every field of the wrong type, and a responses file holding every kind of
line that is not a response plus one longer than the 16 MiB read window. The full campaign also
swaps a live dataset's file for a FIFO and back, and locks and unlocks a folder, while it runs.

Checks: a snapshot at least every MAX_GAP_S (nothing blocks); the live dataset's count follows
its file (never behind by more than its last few lines, exact at the end); every hostile
dataset is reported as it must be (status error or skipped, with its alert; corrupt lines
counted with their offsets, every good line after them counted); the runner's resume and the
vocab job agree with the agent line for line; the runner and vocab refuse the FIFO at once; the
daemon lives on with no traceback in its log and bounded memory.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent.datasets.file_lines import WINDOW_BYTES
from agent.protocol import (
    SNAPSHOT_WATCH,
    DatasetProgress,
    DatasetsConfig,
    PipelineConfig,
    Snapshot,
    WatchParams,
)
from console.link.agent_link import AgentLink
from faults.harness.agents import daemon_pid, log_tracebacks, shut_down_agent
from faults.harness.memory import resident_mb
from faults.hostile._hostile_files_root import LIVE, SWAPPED, HostileRoot, expected_lines
from faults.result import Scale, ScenarioResult
from tests.support.hostile_files import HOSTILE_LINES, no_dac_prefix
from tests.support.operations import local_link
from tests.support.process_checks import alive
from tests.support.simulator_process import agent_env

TITLE = "Hostile files: FIFOs, devices, sockets, loops, locked folders, corrupt and huge lines"
MAX_GAP_S = 3.0
REFUSE_WITHIN_S = 15.0
JOB_LIMIT_S = 180.0
"""Vocab and resume must finish and agree, not be quick: vocab imports numpy and torch, which
took past REFUSE_WITHIN_S beside a full parallel test run (the refusal keeps its own bound)."""
RSS_LIMIT_MB = 300.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Build the root, watch it through a real daemon, check every dataset and the jobs."""
    result = ScenarioResult("hostile_files", TITLE, seed)
    root = HostileRoot.build(workdir / "datasets", locked=no_dac_prefix() is not None)
    result.faults += root.hostile_entries + len(HOSTILE_LINES) + 1
    state_dir = workdir / "state"
    writer = root.start_live_writer()
    try:
        async with local_link(state_dir, _pipeline(root.path), _python(workdir)) as link:
            await _watch(link, root, scale, result)
    finally:
        writer.stop()
        _check_daemon(state_dir, result)
        await shut_down_agent(state_dir)
        root.unlock()
    await asyncio.to_thread(_check_jobs, root, workdir, result)
    return result


def _pipeline(root: Path) -> PipelineConfig:
    return PipelineConfig(datasets=DatasetsConfig(str(root), budget=10**9))


def _python(workdir: Path) -> str:
    """The interpreter to start the agent with: without DAC override when we are root."""
    prefix = no_dac_prefix()
    if not prefix:
        return sys.executable
    wrapper = workdir / "python-without-dac"
    wrapper.write_text(f'#!/bin/sh\nexec {" ".join(prefix)} {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


async def _watch(link: AgentLink, root: HostileRoot, scale: Scale, result: ScenarioResult) -> None:
    await link.call(SNAPSHOT_WATCH, WatchParams(0.2))
    rounds = scale.pick(4, 1)
    snapshots: list[Snapshot] = []
    for number in range(rounds):
        swapped = number % 2 == 1
        if swapped:
            root.swap_live_for_fifo()
            result.faults += 1
        await _collect(link, 4.0, snapshots, result)
        _check_swapped(snapshots, "error" if swapped else "idle", result)
        root.restore_live()
        await _collect(link, 2.0, snapshots, result)
        _check_swapped(snapshots, "idle", result)
    root.stop_writing()
    await _collect(link, 2.0, snapshots, result)
    if not snapshots:
        result.violate("no snapshot came at all")
        return
    _check_final(snapshots[-1], root, result)
    _check_live_over_time(snapshots, result)


async def _collect(
    link: AgentLink, seconds: float, into: list[Snapshot], result: ScenarioResult
) -> None:
    deadline, last = time.monotonic() + seconds, time.monotonic()
    while time.monotonic() < deadline:
        result.attempted += 1
        try:
            event = await asyncio.wait_for(link.next_event(), MAX_GAP_S)
        except asyncio.TimeoutError:
            result.violate(f"no snapshot for {MAX_GAP_S} s: something blocked the agent")
            return
        if event is None:
            result.violate(f"the link closed: {link.closed_reason}")
            return
        if isinstance(event.data, Snapshot):
            result.acknowledged += 1
            result.detection_s.append(time.monotonic() - last)
            last = time.monotonic()
            into.append(event.data)


def _check_swapped(snapshots: list[Snapshot], want: str, result: ScenarioResult) -> None:
    """The dataset whose file was swapped for a FIFO: error while swapped, back after."""
    found = [(d.status, d.responses) for d in snapshots[-1].datasets if d.name == SWAPPED]
    if found != [(want, 1)]:
        result.violate(f"{SWAPPED}: want (status, responses) ({want}, 1), got {found}")


def _check_final(snapshot: Snapshot, root: HostileRoot, result: ScenarioResult) -> None:
    got = {d.name: d for d in snapshot.datasets}
    alerts = {(a.kind, a.subject): a.message for a in snapshot.alerts}
    for name, (kind, words) in root.expected_alerts.items():
        message = alerts.get((kind, name))
        if message is None or words not in message:
            result.violate(f"{name}: want a {kind} alert saying {words!r}, got {message!r}")
    for name in root.expected_errors:
        if name not in got or got[name].status != "error":
            result.violate(
                f"{name}: want status error, got {getattr(got.get(name), 'status', None)}"
            )
    for name in root.skipped:
        if name in got:
            result.violate(f"{name}: listed as a dataset, want it skipped")
    _check_lines(got.get(root.lines_name), root, result)
    live = got.get(root.live_name)
    written = root.live_responses()
    if live is None or live.responses != written:
        result.lost += abs(written - (live.responses if live else 0))
        result.violate(
            f"live dataset: the agent counts {live and live.responses}, the file has {written}"
        )


def _check_lines(
    progress: DatasetProgress | None, root: HostileRoot, result: ScenarioResult
) -> None:
    good, corrupt = expected_lines()
    if progress is None or (progress.responses, progress.corrupt_lines) != (good, corrupt):
        counts = (progress.responses, progress.corrupt_lines) if progress else None
        result.violate(
            f"hostile lines: the agent counts (responses, corrupt) {counts}, want {(good, corrupt)}"
        )
        result.corrupt += 1 if progress and progress.corrupt_lines < corrupt else 0
    result.notes.append(
        f"hostile lines: {corrupt} corrupt lines ({len(HOSTILE_LINES)} kinds and one of "
        f"{WINDOW_BYTES + 100:,} bytes) among {good} good ones; each counted as it must be"
    )


def _check_live_over_time(snapshots: list[Snapshot], result: ScenarioResult) -> None:
    counts = [d.responses for s in snapshots for d in s.datasets if d.name == LIVE]
    moved = sum(1 for a, b in zip(counts, counts[1:], strict=False) if b > a)
    if moved < len(counts) // 4:
        result.violate(f"the live dataset moved in only {moved} of {len(counts)} snapshots")
    result.notes.append(
        f"{len(snapshots)} snapshots in {sum(result.detection_s):.0f} s, the live dataset "
        f"moving in {moved} of them; snapshot gap max {max(result.detection_s, default=0):.2f} s"
    )


def _check_daemon(state_dir: Path, result: ScenarioResult) -> None:
    pid = daemon_pid(state_dir)
    if not alive(pid):
        result.violate("the daemon died")
        return
    rss_mb = resident_mb(pid)
    result.notes.append(f"daemon resident memory at the end: {rss_mb:.0f} MB")
    if rss_mb > RSS_LIMIT_MB:
        result.violate(f"the daemon holds {rss_mb:.0f} MB (limit {RSS_LIMIT_MB:.0f})")
    for line in dict.fromkeys(log_tracebacks(state_dir)):
        result.violate(f"a traceback in agent.log: {line}")


def _check_jobs(root: HostileRoot, workdir: Path, result: ScenarioResult) -> None:
    """The runner refuses the FIFO at once; vocab and resume agree with the agent."""
    fifo_dataset = root.path / root.fifo_name
    started = time.monotonic()
    runner = _run([sys.executable, "-m", "agent.pipeline.inference", "--server", "http://127.0.0.1:9",
                   "--dataset-dir", str(fifo_dataset)])  # fmt: skip
    result.recovery_s.append(time.monotonic() - started)
    if runner is None or runner.returncode != 1 or "is a FIFO" not in runner.stderr:
        result.violate(
            f"the runner on a FIFO: {runner and (runner.returncode, runner.stderr[-300:])}"
        )
    vocab_root = workdir / "vocab-root"
    vocab_root.mkdir()
    shutil.copytree(root.path / root.lines_name, vocab_root / root.lines_name)
    vocab = _run([sys.executable, "-m", "agent.pipeline.vocab", "--datasets-root", str(vocab_root),
                  "--out", str(workdir / "vocab"), "--target-vocab-size", "100", "--draft-vocab-size", "10"],
                 JOB_LIMIT_S)  # fmt: skip
    good, corrupt = expected_lines()
    report = _json(workdir / "vocab" / "vocab_report.json")
    skipped = report.get("skipped_lines_per_dataset", {}).get(root.lines_name)
    if vocab is None or vocab.returncode != 0 or skipped != corrupt:
        result.violate(
            f"vocab skipped {skipped} lines, want {corrupt}: {vocab and vocab.stderr[-300:]}"
        )
    resume = _run(
        [sys.executable, "-c", RESUME, str(vocab_root / root.lines_name / "raw_responses.jsonl")],
        JOB_LIMIT_S,
    )
    counts = json.loads(resume.stdout) if resume is not None and resume.returncode == 0 else None
    if counts != [good, corrupt]:
        result.violate(f"resume --repair found {counts}, want [{good}, {corrupt}]")
    else:
        result.repaired += corrupt
    result.notes.append(
        f"the runner refused the FIFO dataset in {result.recovery_s[-1]:.1f} s; vocab and resume "
        f"each found the same {corrupt} corrupt and {good} good lines as the agent"
    )


RESUME = (
    "import json, sys\nfrom pathlib import Path\n"
    "from agent.pipeline.inference.records import recover\n"
    "state = recover(Path(sys.argv[1]), repair=True)\n"
    "print(json.dumps([len(state.done_ids), state.corrupt_lines_moved]))\n"
)


def _run(
    argv: list[str], limit_s: float = REFUSE_WITHIN_S
) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, env=agent_env(), capture_output=True, text=True,
                              timeout=limit_s)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
