"""The agent's own state folder full, while consoles keep asking: answers, a live link, no orphans.

The state folder is a small tmpfs (root), filled each trial down to 0-3 free pages, so in turn
job.json, shim.json, child.json, the job's log, stop.json or the audit line is the write that
does not fit; without root it is made unwritable instead (EACCES, said in the notes). Each trial
sends what a console sends: ping, snapshot, jobs.list, a launch, a stop; then frees the space and
launches again.

Checks: every request is answered (a result, or an error naming a path in the state folder),
none times out, the same link carries every trial; a launch that fails leaves no job process
behind; every live job process is one `jobs.list` shows as running (none unmanaged); the
snapshot says `state_full` while a launch cannot be recorded; once space is back a launch works.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import stat
import sys
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TypeVar

from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    PING,
    SNAPSHOT,
    JobInfo,
    JobsParams,
    JobSpec,
    LaunchParams,
    Method,
    PingParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
)
from console.link.agent_link import AgentLink, AgentRequestError, LinkError
from faults.harness.agents import job_states, local_agent
from faults.result import Scale, ScenarioResult
from tests.support.full_state import PAGE, job_processes, storage_refusal_problem
from tests.support.small_fs import SmallFs, tmpfs_or_none

P = TypeVar("P")
R = TypeVar("R")

TITLE = "Agent's state folder full while consoles keep asking"

ANSWER_TIMEOUT_S = 30.0
MARKER_JOB = "import sys, time; time.sleep(300)"


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """`scale.pick(30, 4)` fills of the state folder."""
    result = ScenarioResult("state_full", TITLE, seed)
    rng = random.Random(seed)
    marker = str(workdir / "state-full-job")
    pipeline = PipelineConfig(jobs={"marked": JobSpec((sys.executable, "-c", MARKER_JOB, marker))})
    state = workdir / "state"
    outcomes: dict[str, int] = {}
    with _state_folder(state, result) as fs:
        async with local_agent(state, pipeline) as link:
            for trial in range(scale.pick(30, 4)):
                outcome = await _trial(link, fs, state, marker, trial, rng, result)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
    _no_job_alive(marker, set(), "after the agent stopped", result)
    result.notes.append(
        f"launches on a full state folder: {dict(sorted(outcomes.items()))} (refused: the record "
        "that did not fit; started: the job's state once stopped, 'lost' when the shim could not "
        "record its pid and killed it at once)"
    )
    return result


@contextlib.contextmanager
def _state_folder(state: Path, result: ScenarioResult) -> Iterator[SmallFs | None]:
    with tmpfs_or_none(state, size_kib=32 * 1024) as mounted:
        if isinstance(mounted, str):
            result.notes.append(f"no tmpfs ({mounted}): the state folder was made unwritable")
            yield None
        else:
            yield mounted


async def _trial(
    link: AgentLink, fs: SmallFs | None, state: Path, marker: str, trial: int, rng: random.Random,
    result: ScenarioResult,
) -> str:  # fmt: skip
    pages = rng.randint(0, 3)
    with _full(fs, state, pages):
        result.faults += 1
        launched = await _answered(link, JOBS_LAUNCH, LaunchParams("marked"), f"t{trial}", result)
        await _answered(link, PING, PingParams(), None, result)
        snapshot = await _answered(link, SNAPSHOT, SnapshotParams(), None, result)
        await _answered(link, JOBS_LIST, JobsParams(), None, result)
        _check_launch(launched, snapshot, state, f"trial {trial} ({pages} pages free)", result)
        outcome = _outcome(launched)
        if isinstance(launched, JobInfo):
            stopped = await _answered(
                link, JOBS_STOP, StopParams(launched.id), f"t{trial}-stop", result
            )
            outcome = f"started, then {getattr(getattr(stopped, 'job', None), 'state', stopped)}"
        await _no_unmanaged(link, marker, f"trial {trial}", result)
    again = await _answered(link, JOBS_LAUNCH, LaunchParams("marked"), f"t{trial}-again", result)
    if not isinstance(again, JobInfo):
        result.violate(f"trial {trial}: with space back, a launch still fails: {again}")
        return outcome
    await _answered(link, JOBS_STOP, StopParams(again.id), f"t{trial}-again-stop", result)
    return outcome


def _outcome(launched: object) -> str:
    if isinstance(launched, AgentRequestError):
        return f"refused at {Path(launched.detail.split(':', 1)[0].split()[-1]).name}"
    return type(launched).__name__


@contextlib.contextmanager
def _full(fs: SmallFs | None, state: Path, pages: int) -> Iterator[None]:
    """The state folder full but `pages` pages (tmpfs), or unwritable (no root)."""
    if fs is not None:
        filler = fs.fill(leave_bytes=pages * PAGE)
        try:
            yield
        finally:
            filler.unlink()
        return
    jobs = state / "jobs"
    mode = jobs.stat().st_mode
    os.chmod(jobs, stat.S_IRUSR | stat.S_IXUSR)
    try:
        yield
    finally:
        os.chmod(jobs, mode)


async def _answered(
    link: AgentLink, method: Method[P, R], params: P, key: str | None, result: ScenarioResult
) -> R | LinkError:
    """The result, or the AgentRequestError; a lost link or a timeout is a violation."""
    result.attempted += 1
    try:
        answer: R | LinkError = await link.call(
            method, params, idempotency_key=key, timeout_s=ANSWER_TIMEOUT_S
        )
    except AgentRequestError as refused:
        answer = refused
    except LinkError as exc:
        result.lost += 1
        result.violate(f"{method.name}: no answer: {exc}")
        return exc
    result.acknowledged += 1
    return answer


def _check_launch(
    launched: object, snapshot: object, state: Path, trial: str, result: ScenarioResult
) -> None:
    if isinstance(launched, JobInfo):
        return  # it fit: the job is the agent's, checked below like any other
    if (problem := storage_refusal_problem(launched, state)) is not None:
        result.violate(f"{trial}: {problem}")
    kinds = {a.kind for a in snapshot.alerts} if isinstance(snapshot, Snapshot) else set()
    if "state_full" not in kinds:
        result.violate(f"{trial}: the launch failed but the snapshot has no state_full alert")


async def _no_unmanaged(link: AgentLink, marker: str, trial: str, result: ScenarioResult) -> None:
    """Every live job process is one the agent lists as running, so it can be stopped."""
    jobs = await _maybe(job_states(link))
    running = {job.pid for job in (jobs or {}).values() if job.state in ("starting", "running")}
    _no_job_alive(marker, {pid for pid in running if pid}, trial, result)


def _no_job_alive(marker: str, managed: set[int], trial: str, result: ScenarioResult) -> None:
    alive = job_processes(marker)
    if alive - managed:
        result.violate(f"{trial}: job process(es) {sorted(alive - managed)} run unmanaged")
        for pid in alive - managed:
            with contextlib.suppress(ProcessLookupError):
                kill_process(pid, signal.SIGKILL)


async def _maybe(call: Awaitable[dict[str, JobInfo]]) -> dict[str, JobInfo] | None:
    try:
        return await call
    except LinkError:
        return None
