"""The agent's own state folder full: every request answered, the link up, no job left unmanaged.

One test breaks the audit log for good (a folder where the file should be: any user can do it);
the others put the state folder on a small tmpfs and fill it (root only; skipped elsewhere with
the reason), down to the page, so each of a job's records in turn is the one that does not fit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.jobs.shim import EXIT_UNRECORDED
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    PING,
    SNAPSHOT,
    ErrorCode,
    JobInfo,
    JobsList,
    JobsParams,
    JobSpec,
    LaunchParams,
    PingParams,
    PipelineConfig,
    Snapshot,
    SnapshotParams,
    StopParams,
)
from agent.state import StatePaths
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from tests.support.full_state import PAGE, job_processes, storage_refusal_problem
from tests.support.operations import local_link
from tests.support.simulator_process import agent_env
from tests.support.small_fs import SmallFs, small_tmpfs

PID_FILE_JOB = (
    "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)"
)


def pipeline(tmp_path: Path) -> PipelineConfig:
    return PipelineConfig(
        jobs={"sleeper": JobSpec((sys.executable, "-c", PID_FILE_JOB, str(tmp_path / "job.pid")))}
    )


async def launch(link: AgentLink, key: str) -> JobInfo:
    info: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("sleeper"), idempotency_key=key)
    return info


async def alerts_of(link: AgentLink) -> dict[str, str]:
    snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
    return {alert.kind: alert.message for alert in snapshot.alerts}


async def test_an_audit_log_that_cannot_be_written_loses_lines_not_answers(
    tmp_path: Path, state_dir: Path
) -> None:
    async with local_link(state_dir, pipeline(tmp_path)) as link:
        (state_dir / "audit.jsonl").unlink(missing_ok=True)
        (state_dir / "audit.jsonl").mkdir()  # every append now fails, for any user

        job = await launch(link, "k1")
        stopped = await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="k2")

        assert stopped.outcome == "stopped"
        assert "audit.jsonl" in (await alerts_of(link))["state_full"]
        await link.call(PING, PingParams())


@pytest.fixture
async def full_state(tmp_path: Path, state_dir: Path) -> AsyncIterator[tuple[AgentLink, SmallFs]]:
    """A daemon whose state folder is a 32 MiB tmpfs; filled by each test as it needs."""
    with small_tmpfs(state_dir, size_kib=32 * 1024) as mount:
        link = await open_local_link(state_dir, pipeline(tmp_path))
        try:
            await link.call(PING, PingParams())
            yield link, mount
        finally:
            await link.close()
            stop_daemon(StatePaths(state_dir))


async def test_a_full_state_folder_refuses_a_launch_naming_the_path_and_stays_up(
    full_state: tuple[AgentLink, SmallFs], tmp_path: Path, state_dir: Path
) -> None:
    link, mount = full_state
    filler = mount.fill()

    with pytest.raises(AgentRequestError) as refused:
        await launch(link, "k1")

    assert storage_refusal_problem(refused.value, state_dir) is None
    assert "nothing was started" in refused.value.detail
    assert not (tmp_path / "job.pid").exists()
    listing: JobsList = await link.call(JOBS_LIST, JobsParams())
    assert listing.jobs == ()
    assert "state_full" in await alerts_of(link)
    filler.unlink()
    job = await launch(link, "k2")
    assert job.state in ("starting", "running")
    assert "state_full" not in await alerts_of(link)
    await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="k3")


async def refused_with_room_for_one_page(link: AgentLink, mount: SmallFs) -> AgentRequestError:
    """A launch with one page free: room for job.json, none for shim.json.

    A log the agent appends to may cross into a new page with this launch's line first (where,
    depends on how long the paths in its earlier lines were) and take the page: then job.json
    is what did not fit and nothing started. Tried again with a page free, the log has room.
    """
    for attempt in range(3):
        filler = mount.fill(leave_bytes=PAGE)
        with pytest.raises(AgentRequestError) as refused:
            await launch(link, f"k{attempt}")
        if "job.json" not in refused.value.detail:
            break
        filler.unlink()
    return refused.value


async def test_a_shim_whose_record_does_not_fit_is_killed_with_its_job(
    full_state: tuple[AgentLink, SmallFs], tmp_path: Path
) -> None:
    link, mount = full_state
    refused = await refused_with_room_for_one_page(link, mount)

    assert refused.code == ErrorCode.STORAGE
    assert "shim.json" in refused.detail
    listing: JobsList = await link.call(JOBS_LIST, JobsParams())
    assert listing.jobs == (), "a job the agent cannot stop later was left behind"
    assert_no_job_alive(tmp_path / "job.pid")


def test_a_job_whose_pid_cannot_be_recorded_is_stopped_at_once(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "state", size_kib=256) as mount:
        job_dir = mount.path / "jobs" / "sleeper-1"
        job_dir.mkdir(parents=True)
        argv = [sys.executable, "-c", PID_FILE_JOB, str(tmp_path / "job.pid")]
        (job_dir / "job.json").write_text(json.dumps({"id": "sleeper-1", "argv": argv}))
        mount.fill()

        shim = subprocess.run(
            [sys.executable, "-m", "agent", "shim", "--job-dir", str(job_dir)],
            env=agent_env(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    assert shim.returncode == EXIT_UNRECORDED, shim.stderr
    assert "stopped the job at once: cannot record its pid" in shim.stderr
    assert "Traceback" not in shim.stderr
    assert_no_job_alive(tmp_path / "job.pid")


def assert_no_job_alive(pid_file: Path) -> None:
    """No live process runs the job (its command line names `pid_file`, unique to the test)."""
    running = job_processes(str(pid_file))
    assert running == set(), f"the job still runs as pid(s) {running}"


def test_a_failure_is_cleared_only_by_a_write_under_the_same_entry(tmp_path: Path) -> None:
    from agent.state.health import StateHealth

    health = StateHealth(tmp_path)
    health.failed(PermissionError(13, "Permission denied", str(tmp_path / "jobs" / "x-1")))

    health.wrote(tmp_path / "audit.jsonl")
    [alert] = health.alerts(1.0)
    assert f"writing {tmp_path / 'jobs' / 'x-1'} failed: Permission denied" in alert.message
    health.wrote(tmp_path / "jobs")
    assert health.alerts(1.0) == []
