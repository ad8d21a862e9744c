"""The daemon's own life: `python -m agent stop` leaves jobs running; a lost state folder ends it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JobInfo,
    JobsList,
    JobsParams,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from agent.state import read_json
from console.link.local_link import open_local_link
from tests.support.operations import local_link, wait_for_job
from tests.support.process_checks import alive, gone_within
from tests.support.simulator_process import agent_env

LEAVE_WITHIN_S = 60.0
SLEEPER = JobSpec((sys.executable, "-c", "import time; time.sleep(300)"), grace_s=1)


async def started_daemon(state_dir: Path, config: PipelineConfig) -> int:
    """Start the daemon through a console that then goes away; returns the daemon's pid."""
    link = await open_local_link(state_dir, config)
    await link.close()
    return int(read_json(state_dir / "daemon.json")["pid"])


async def test_agent_stop_ends_the_daemon_and_leaves_its_jobs_running(state_dir: Path) -> None:
    config = PipelineConfig(jobs={"sleeper": SLEEPER})
    async with local_link(state_dir, config) as link:
        launched: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("sleeper"), idempotency_key="s1"
        )
        job = await wait_for_job(link, launched.id, {"running"})
    daemon = int(read_json(state_dir / "daemon.json")["pid"])
    stopped = subprocess.run(
        [sys.executable, "-m", "agent", "stop", "--state-dir", str(state_dir)],
        env=agent_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stderr
    assert await gone_within(daemon, 10)
    assert job.pid is not None
    assert alive(job.pid), "the job outlives the daemon"
    async with local_link(state_dir, config) as link:
        listed: JobsList = await link.call(JOBS_LIST, JobsParams())
    assert [(j.id, j.state) for j in listed.jobs] == [(job.id, "running")]


@pytest.mark.slow
async def test_a_daemon_whose_state_folder_is_deleted_leaves_by_itself(state_dir: Path) -> None:
    daemon = await started_daemon(state_dir, PipelineConfig())
    shutil.rmtree(state_dir)
    assert await gone_within(daemon, LEAVE_WITHIN_S)


@pytest.mark.slow
async def test_a_daemon_whose_state_folder_is_replaced_leaves_the_new_one_alone(
    tmp_path: Path, state_dir: Path
) -> None:
    daemon = await started_daemon(state_dir, PipelineConfig())
    os.rename(state_dir, tmp_path / "old-state")
    state_dir.mkdir(mode=0o700)
    others = [state_dir / "agent.sock", state_dir / "daemon.json"]
    for path in others:
        path.write_text("another daemon's")
    assert await gone_within(daemon, LEAVE_WITHIN_S)
    assert all(path.read_text() == "another daemon's" for path in others)
