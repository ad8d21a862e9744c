"""A job its daemon died in the middle of launching: adopted from what its files say.

A daemon killed 0-30 ms after a launch left job.json and child.json but no shim.json; the next
daemon listed the job as `starting` for good, and `jobs.stop` computed a group of 0 from the
missing record and called `os.killpg(0, SIGTERM)`: the daemon signalled its own group and died,
and the job lived on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.host.procfs import boot_id, start_ticks
from agent.host.signals import UnsafeSignalError, is_running, kill_group, kill_process
from agent.protocol import JOBS_STOP, PING, JobInfo, PingParams, PipelineConfig, StopParams
from agent.state import read_json
from tests.support.operations import jobs_now, local_link

JOB = "job-20261204-120000"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process in a session of its own, as a job under its shim would be."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)  # fmt: skip
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def half_launched(state_dir: Path, child: subprocess.Popen[bytes] | None, age_s: float) -> None:
    folder = state_dir / "jobs" / JOB
    folder.mkdir(parents=True, mode=0o700)
    job = {"id": JOB, "name": "inference", "kind": "command", "argv": ["x"],
           "launched_at": time.time() - age_s, "stop_signal": "SIGTERM", "grace_s": 2}  # fmt: skip
    (folder / "job.json").write_text(json.dumps(job))
    if child is not None:
        record = {"pid": child.pid, "start_ticks": start_ticks(child.pid), "boot_id": boot_id()}
        (folder / "child.json").write_text(json.dumps(record))


async def test_a_job_with_no_shim_record_is_stopped_by_its_own_process_and_the_daemon_lives(
    state_dir: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    state_dir.mkdir(mode=0o700)
    half_launched(state_dir, sleeper, age_s=1.0)
    async with local_link(state_dir, PipelineConfig()) as link:
        [job] = await jobs_now(link)
        assert (job.id, job.state) == (JOB, "running")
        daemon = int(read_json(state_dir / "daemon.json")["pid"])
        stopped = await link.call(JOBS_STOP, StopParams(JOB), idempotency_key="stop")
        assert stopped.outcome == "stopped"
        assert sleeper.wait(timeout=30) == -signal.SIGTERM
        await link.call(PING, PingParams())  # the daemon answers: it did not signal itself
        assert is_running(daemon)


async def test_a_job_with_neither_shim_nor_child_record_is_lost_once_its_launch_is_old(
    state_dir: Path,
) -> None:
    state_dir.mkdir(mode=0o700)
    half_launched(state_dir, None, age_s=3600.0)
    async with local_link(state_dir, PipelineConfig()) as link:
        jobs: tuple[JobInfo, ...] = await jobs_now(link)
        assert [(j.id, j.state) for j in jobs] == [(JOB, "lost")]
        stopped = await link.call(JOBS_STOP, StopParams(JOB), idempotency_key="stop")
        assert stopped.outcome in ("already_exited", "lost")
        await link.call(PING, PingParams())


@pytest.mark.parametrize("number", [0, 1, -1, -4242])
def test_no_signal_goes_to_a_pid_or_group_no_job_can_have(number: int) -> None:
    with pytest.raises(UnsafeSignalError):
        kill_process(number, signal.SIGTERM)
    with pytest.raises(UnsafeSignalError):
        kill_group(number, signal.SIGTERM)


def test_no_signal_goes_to_the_agent_itself_or_its_group() -> None:
    with pytest.raises(UnsafeSignalError, match="the agent"):
        kill_process(os.getpid(), signal.SIGTERM)
    with pytest.raises(UnsafeSignalError, match="the agent"):
        kill_group(os.getpgid(0), signal.SIGTERM)
