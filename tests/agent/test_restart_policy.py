"""Restart policies: a job that fails comes back by itself, within its limits, and says why not.

Real daemon, real jobs; crashes are real exits and real SIGKILLs, the "reboot" kills every
process of the box (the daemon, the shim, the job) and starts the agent again.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.host import procfs
from agent.host.procfs import boot_id
from agent.host.signals import kill_group, kill_process
from agent.jobs.supervisor import _state as job_state
from agent.operations.restarts import MAX_DELAY_S, POLICY_NOW_NO, scheduled_wait_s
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    SNAPSHOT,
    DatasetsConfig,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
)
from agent.state import read_json
from console.link.agent_link import AgentLink
from tests.support.datasets import write_prompts
from tests.support.operations import (
    events_of,
    jobs_now,
    jobs_where,
    local_link,
    observer_scans,
    text_appears,
)

PY = sys.executable
FAST = {"restart": "on-failure", "restart_delay_s": 0.1, "restart_window_s": 600.0}
BACKOFF_S = 2.0
"""Long enough for a person's stop, start or apply to land while the restart waits."""


def exits(code: int) -> tuple[str, ...]:
    return (PY, "-c", f"import sys; print('ran, exiting {code}', flush=True); sys.exit({code})")


def fails_once(flag: Path) -> tuple[str, ...]:
    """Exits 1 the first time; every later run stays up (the run a person starts by hand)."""
    code = (
        "import pathlib, sys, time; flag = pathlib.Path(sys.argv[1])\n"
        "if not flag.exists(): flag.touch(); print('failing', flush=True); sys.exit(1)\n"
        "print('up', flush=True); time.sleep(600)"
    )
    return (PY, "-c", code, str(flag))


OUT_OF_MEMORY = (
    "import sys\nprint('Traceback (most recent call last):', file=sys.stderr)\n"
    "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.', "
    "file=sys.stderr)\nsys.exit(1)"
)


def raises_at(counter: Path, same_place: bool) -> tuple[str, ...]:
    """Raises ValueError each run: at one line, or one line further down each time."""
    code = (
        "import pathlib, sys; c = pathlib.Path(sys.argv[1]); n = int(c.read_text() or 0) "
        "if c.exists() else 0; c.write_text(str(n + 1))\n"
        f"exec(compile('\\n' * (0 if {same_place} else n) + 'raise ValueError(n)', "
        "'load.py', 'exec'), {'n': n})"
    )
    return (PY, "-c", code, str(counter))


def pipeline(tmp_path: Path, backoff_restart: str = "on-failure") -> PipelineConfig:
    root = tmp_path / "datasets"
    write_prompts(root / "D", 2)
    sleeper = (PY, "-c", "import time; print('up', flush=True); time.sleep(600)")
    backoff = {"restart": backoff_restart, "restart_delay_s": BACKOFF_S, "restart_window_s": 600.0}
    return PipelineConfig(
        datasets=DatasetsConfig(str(root), low_disk_floor_bytes=2**62),
        jobs={
            "backoff": JobSpec(fails_once(tmp_path / "failed-once"), **backoff),  # type: ignore[arg-type]
            "crash": JobSpec(exits(1), max_restarts=2, **FAST),  # type: ignore[arg-type]
            "refused": JobSpec(exits(2), **FAST),  # type: ignore[arg-type]
            "disk": JobSpec(exits(5), **FAST),  # type: ignore[arg-type]
            "sleeper": JobSpec(sleeper, **FAST),  # type: ignore[arg-type]
            "plain": JobSpec(sleeper),
            "oom": JobSpec((PY, "-c", OUT_OF_MEMORY), max_restarts=3, **FAST),  # type: ignore[arg-type]
            "oom_no_policy": JobSpec((PY, "-c", OUT_OF_MEMORY)),
            "same": JobSpec(raises_at(tmp_path / "same", True), max_restarts=3, **FAST),  # type: ignore[arg-type]
            "moves": JobSpec(raises_at(tmp_path / "moves", False), max_restarts=2, **FAST),  # type: ignore[arg-type]
        },
    )


@pytest.fixture
async def link(tmp_path: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    async with local_link(state_dir, pipeline(tmp_path)) as agent:
        yield agent


async def launch(link: AgentLink, name: str) -> JobInfo:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams(name), idempotency_key=f"k-{name}")
    return job


async def test_a_crash_loop_is_restarted_up_to_its_cap_then_given_up_with_one_alert(
    link: AgentLink,
) -> None:
    await launch(link, "crash")

    jobs = await jobs_where(
        link, lambda js: any(j.restart_note and j.restart_note.startswith("gave up") for j in js)
    )
    await observer_scans(link, 3)

    line = sorted((j for j in await jobs_now(link) if j.name == "crash"), key=lambda j: j.id)
    assert len(line) == 3, "the first run and two restarts, then no more"
    assert [j.restarts for j in line] == [0, 1, 2]
    assert line[1].restart_of == line[0].id
    assert line[2].restart_of == line[1].id
    assert all(j.state == "failed" and j.exit_code == 1 for j in line)
    assert "2 restarts within 10 min" in (line[2].restart_note or "")
    restarted = await events_of(link, "job_restarted")
    assert len(restarted) == 2
    assert all("exited with code 1" in m for m in restarted)
    assert all("ran, exiting 1" in m for m in restarted), "the event carries its last output"
    assert len(await events_of(link, "restart_gave_up")) == 1
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    assert [a.subject for a in snapshot.alerts if a.kind == "crash_loop"] == [line[2].id]
    del jobs


async def test_an_exit_that_a_retry_cannot_mend_is_not_restarted_and_says_why(
    link: AgentLink,
) -> None:
    job = await launch(link, "refused")
    [ended] = await jobs_where(link, lambda js: bool(js and js[0].restart_note))
    await observer_scans(link, 3)
    assert [j.id for j in await jobs_now(link)] == [job.id]
    assert ended.restart_note == (
        "not restarted: exit 2 means refused (its arguments, or the server refused every "
        "request); a retry cannot help"
    )


async def test_a_stop_asked_for_is_never_undone(link: AgentLink) -> None:
    job = await launch(link, "sleeper")
    await text_appears(Path(job.log_path or ""), "up")
    await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="stop")
    await observer_scans(link, 3)
    [stopped] = await jobs_now(link)
    assert (stopped.id, stopped.state, stopped.restart_note) == (job.id, "stopped", None)


async def test_a_job_killed_by_a_signal_is_restarted(link: AgentLink) -> None:
    job = await launch(link, "sleeper")
    await text_appears(Path(job.log_path or ""), "up")
    # the job may write before the shim records its pid: wait for the pid, not the log line
    [running] = await jobs_where(link, lambda js: bool(js and js[0].pid))
    assert running.pid is not None
    kill_process(running.pid, signal.SIGKILL)

    jobs = await jobs_where(link, lambda js: any(j.restart_of == job.id and j.pid for j in js))

    killed = next(j for j in jobs if j.id == job.id)
    assert killed.state == "killed"
    assert killed.exit_signal == "SIGKILL"
    assert killed.restart_note is not None
    assert killed.restart_note.startswith("restarted as")


async def test_exit_5_waits_for_disk_space_before_it_restarts(
    link: AgentLink, tmp_path: Path, state_dir: Path
) -> None:
    job = await launch(link, "disk")
    [waiting] = await jobs_where(
        link, lambda js: bool(js and (js[0].restart_note or "").startswith("waiting for"))
    )
    assert "exit 5: a write failed" in (waiting.restart_note or "")
    assert len(await events_of(link, "restart_waits")) == 1

    roomy = pipeline(tmp_path)
    assert roomy.datasets is not None
    roomier = PipelineConfig(
        datasets=DatasetsConfig(roomy.datasets.root, low_disk_floor_bytes=0), jobs=roomy.jobs
    )
    async with local_link(state_dir, roomier) as other:  # "space is back": a floor of 0 bytes
        assert await other.apply_pipeline(roomier) == (
            "datasets.low_disk_floor_bytes: 4,611,686,018,427,387,904 → 0",
        )
        await jobs_where(other, lambda js: any(j.restart_of == job.id for j in js))


async def test_after_every_process_is_killed_the_agent_takes_the_run_up_again(
    tmp_path: Path, state_dir: Path
) -> None:
    config = pipeline(tmp_path)
    async with local_link(state_dir, config) as link:
        watched = await launch(link, "sleeper")
        unwatched = await launch(link, "plain")
        await text_appears(Path(watched.log_path or ""), "up")
        await text_appears(Path(unwatched.log_path or ""), "up")
        jobs = await jobs_now(link)
    for job in jobs:  # the box goes down: the shims, the jobs and the daemon, all at once
        kill_group(job.pgid or 0, signal.SIGKILL)
    kill_process(int(read_json(state_dir / "daemon.json")["pid"]), signal.SIGKILL)

    async with local_link(state_dir, None) as link:  # a console comes back; no new config
        after = await jobs_where(link, lambda js: any(j.restart_of == watched.id for j in js))
        await observer_scans(link, 3)
        after = await jobs_now(link)
    states = {j.id: j.state for j in after}
    assert states[watched.id] == "lost"
    assert states[unwatched.id] == "lost"
    restarted = [j for j in after if j.restart_of]
    assert [j.restart_of for j in restarted] == [watched.id], "only the on-failure job comes back"


def test_a_process_recorded_under_another_boot_is_never_taken_for_the_job() -> None:
    me = {"pid": os.getpid(), "start_ticks": _my_ticks()}
    assert job_state(False, {**me, "boot_id": "another-boot"}, None, None, None)[0] == "lost"
    assert job_state(False, me, None, None, None)[0] == "starting"  # older records: no boot id


def test_a_job_that_ended_after_its_stop_was_asked_reads_stopped_even_if_the_end_was_not_recorded() -> (
    None
):
    """The agent killed between a stop's SIGTERM and its record left stop.json saying `asked`."""
    asked = {"outcome": "asked", "steps": [], "at": 1.0}
    killed = {"exit_code": None, "exit_signal": "SIGTERM", "ended_at": 2.0}
    assert job_state(False, None, None, killed, asked)[0] == "stopped"
    assert job_state(False, None, None, killed, None)[0] == "killed"  # no stop asked: a crash
    gone = {"pid": 2**22 + 1, "start_ticks": 1}  # no such process: the job is gone, unrecorded
    assert job_state(False, gone, gone, None, asked)[0] == "stopped"
    assert job_state(False, gone, gone, None, None)[0] == "lost"


def _my_ticks() -> int:
    from agent.host.procfs import start_ticks

    ticks = start_ticks(os.getpid())
    assert ticks is not None
    return ticks


async def in_back_off(link: AgentLink) -> JobInfo:
    """The `backoff` job, failed and waiting out its back-off before its restart."""
    await launch(link, "backoff")
    [waiting] = await jobs_where(
        link, lambda js: bool(js and (js[0].restart_note or "").startswith("restarting at"))
    )
    return waiting


async def past_the_back_off(link: AgentLink, waiting: JobInfo, note: str) -> tuple[JobInfo, ...]:
    """The jobs once the back-off's end has passed and the agent has looked again."""
    await jobs_where(
        link, lambda js: any(j.id == waiting.id and j.restart_note == note for j in js)
    )
    due = (waiting.ended_at or 0.0) + BACKOFF_S + 0.5
    while time.time() < due:
        await observer_scans(link, 1)
    await observer_scans(link, 3)
    return await jobs_now(link)


async def test_a_stop_while_a_restart_waits_ends_the_line(link: AgentLink) -> None:
    waiting = await in_back_off(link)
    await link.call(JOBS_STOP, StopParams(waiting.id), idempotency_key="stop-in-back-off")
    jobs = await past_the_back_off(
        link, waiting, "not restarted: a stop was asked for it while it waited to restart"
    )
    assert [j.id for j in jobs] == [waiting.id], "no restart after the stop"


async def test_a_start_by_hand_while_a_restart_waits_is_the_only_new_run(link: AgentLink) -> None:
    waiting = await in_back_off(link)
    mine = await link.call(JOBS_LAUNCH, LaunchParams("backoff"), idempotency_key="by-hand")
    jobs = await past_the_back_off(link, waiting, f"not restarted: {mine.id} was started since")
    assert sorted(j.id for j in jobs) == sorted([waiting.id, mine.id]), "never two runs at once"
    assert len(await events_of(link, "job_restarted")) == 0


async def test_apply_setting_restart_no_while_a_restart_waits_is_obeyed(
    link: AgentLink, tmp_path: Path, state_dir: Path
) -> None:
    waiting = await in_back_off(link)
    async with local_link(state_dir, pipeline(tmp_path, backoff_restart="no")) as other:
        assert await other.apply_pipeline(pipeline(tmp_path, backoff_restart="no")) == (
            "job backoff: restart changed",
        )
    jobs = await past_the_back_off(link, waiting, POLICY_NOW_NO)
    assert [j.id for j in jobs] == [waiting.id]


def test_a_scheduled_restart_waits_by_the_monotonic_clock_and_never_past_the_longest_delay() -> (
    None
):
    stepped_back = time.time() + 3600  # the wall clock went back an hour after it was written
    on_this_boot = {"at": stepped_back, "at_monotonic": time.monotonic() + 5, "boot_id": boot_id()}
    wait_s = scheduled_wait_s(on_this_boot)
    assert wait_s is not None
    assert 4 < wait_s <= 5
    after_a_reboot = {**on_this_boot, "boot_id": "another-boot"}
    assert scheduled_wait_s(after_a_reboot) == MAX_DELAY_S
    assert scheduled_wait_s({"at": time.time() - 10}) == 0.0
    assert scheduled_wait_s({"at": "soon"}) is None


def test_a_boot_id_that_reads_empty_never_makes_a_live_process_someone_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = {"pid": os.getpid(), "start_ticks": _my_ticks(), "boot_id": boot_id() or "recorded-boot"}
    monkeypatch.setattr(procfs, "boot_id", lambda: "")
    assert job_state(False, me, None, None, None)[0] == "starting", "alive: not lost"


async def test_a_gpu_out_of_memory_is_not_restarted_and_one_alert_names_the_knobs(
    link: AgentLink,
) -> None:
    """The same argv runs out of memory the same way: it was restarted up to its cap."""
    job = await launch(link, "oom")
    [ended] = await jobs_where(link, lambda js: bool(js and js[0].restart_note))
    await observer_scans(link, 3)
    assert [j.id for j in await jobs_now(link)] == [job.id], "not started again"
    note = ended.restart_note or ""
    assert note.startswith("not restarted: it would fail the same way: GPU out of memory (")
    assert "--batch-size" in note
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    [alert] = [a for a in snapshot.alerts if a.kind == "same_failure"]
    assert (alert.subject, alert.severity) == (job.id, "error")
    assert "lower the batch size" in alert.message
    [said] = await events_of(link, "restart_not_useful")
    assert "CUDA out of memory" in said


async def test_a_job_without_a_policy_still_has_its_cause_said(link: AgentLink) -> None:
    job = await launch(link, "oom_no_policy")
    [ended] = await jobs_where(link, lambda js: bool(js and js[0].restart_note))
    assert ended.id == job.id
    assert "GPU out of memory" in (ended.restart_note or "")


async def test_the_same_error_at_the_same_place_twice_ends_the_line(link: AgentLink) -> None:
    await launch(link, "same")
    await jobs_where(link, lambda js: any((j.restart_note or "").startswith(
        "not restarted: it would fail the same way") for j in js))  # fmt: skip
    await observer_scans(link, 3)
    line = sorted(await jobs_now(link), key=lambda j: j.id)
    assert len(line) == 2, "the first run, one restart, and no more"
    assert "load.py:1 in <module>: ValueError" in (line[1].restart_note or "")


async def test_an_error_that_moves_keeps_the_policy_to_its_cap(link: AgentLink) -> None:
    await launch(link, "moves")
    await jobs_where(link, lambda js: any((j.restart_note or "").startswith("gave up") for j in js))
    assert len(await jobs_now(link)) == 3, "the first run and two restarts: each crash differed"
