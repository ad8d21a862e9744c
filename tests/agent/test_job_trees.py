"""A job is its whole process tree: what it leaves running when its main process ends is ended.

A worker that stayed in the job's group, or left it with setsid (re-parented to the shim, a child
subreaper), used to outlive the job: once the end was recorded, no stop could prove it was the
job's, so it ran on unseen. Each worker here writes its pid to a file, then sleeps.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.host.procfs import process_info
from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from agent.state import read_json
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.operations import jobs_where, local_link, text_appears
from tests.support.process_checks import alive, gone_within

PY = sys.executable
WORKER = (
    "import os, subprocess, sys, time\n"
    "mode, pid_file = sys.argv[1], sys.argv[2]\n"
    "if mode == 'worker':\n"
    "    if sys.argv[3] == 'setsid':\n"
    "        os.setsid()\n"
    "    open(pid_file, 'w').write(str(os.getpid()))\n"
    "    time.sleep(600)\n"
    "else:\n"
    "    subprocess.Popen([sys.executable, __file__, 'worker', pid_file, mode])\n"
    "    while not os.path.exists(pid_file) or not open(pid_file).read():\n"
    "        time.sleep(0.01)\n"
    "    print('worker started', flush=True)\n"
)


def pipeline(tmp_path: Path) -> PipelineConfig:
    script = tmp_path / "leaves_a_worker.py"
    script.write_text(WORKER)
    return PipelineConfig(
        jobs={
            f"{mode}_job": JobSpec((PY, str(script), mode, str(tmp_path / f"{mode}.pid")))
            for mode in ("setsid", "group")
        }
    )


@pytest.fixture
async def link(tmp_path: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    async with local_link(state_dir, pipeline(tmp_path)) as agent:
        yield agent


@pytest.mark.parametrize("mode", ["setsid", "group"])
async def test_a_worker_left_running_when_the_job_ends_is_ended_with_it(
    link: AgentLink, tmp_path: Path, state_dir: Path, mode: str
) -> None:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams(f"{mode}_job"), idempotency_key=mode)
    await text_appears(Path(job.log_path or ""), "worker started")
    worker = int((tmp_path / f"{mode}.pid").read_text())
    try:
        ended = await jobs_where(link, lambda jobs: jobs[0].state not in ("starting", "running"))
        assert ended[0].state == "exited", ended[0]
        assert not alive(worker), f"the job's {mode} worker {worker} outlived the job"
        record = read_json(state_dir / "jobs" / job.id / "exit.json")
        assert isinstance(record, dict)
        assert record["leftovers_ended"] == 1
        assert "ended 1 process(es) it left running" in Path(job.log_path or "").read_text()
    finally:
        if alive(worker):
            kill_process(worker, signal.SIGKILL)


KILLS_ITS_SHIM = (
    "import os, signal, sys, time\n"
    "pid_file = sys.argv[1]\n"
    "if os.fork() == 0:\n"  # a worker in its own session, its parent gone: below the shim only
    "    os.setsid()\n"
    "    if os.fork():\n"
    "        os._exit(0)\n"
    "    open(pid_file + '.tmp', 'w').write(str(os.getpid()))\n"
    "    os.rename(pid_file + '.tmp', pid_file)\n"
    "    time.sleep(600)\n"
    "while not os.path.exists(pid_file):\n"
    "    time.sleep(0.01)\n"
    "shim = os.getppid()\n"
    "os.kill(shim, signal.SIGKILL)\n"  # the shim, which held the worker below it
    "while os.getppid() == shim:\n"  # re-parented once the kill has landed
    "    time.sleep(0.01)\n"
    "print('shim killed', flush=True)\n"
    "if sys.argv[2:] == ['stay']:\n"
    "    time.sleep(600)\n"
)


@contextlib.asynccontextmanager
async def shim_killed(
    tmp_path: Path, state_dir: Path, *stay: str
) -> AsyncIterator[tuple[AgentLink, JobInfo, int]]:
    """A job that started a worker and killed its shim: (link, job, worker pid), killed after."""
    script = tmp_path / "kills_its_shim.py"
    script.write_text(KILLS_ITS_SHIM)
    pid_file = tmp_path / "worker.pid"
    spec = JobSpec((PY, str(script), str(pid_file), *stay), grace_s=1.0)
    agent = await open_local_link(state_dir, PipelineConfig(jobs={"rogue": spec}))
    worker = 0
    try:
        job: JobInfo = await agent.call(JOBS_LAUNCH, LaunchParams("rogue"), idempotency_key="r")
        await text_appears(Path(job.log_path or ""), "shim killed")
        worker = int(pid_file.read_text())
        yield agent, job, worker
    finally:
        await agent.close()
        if worker and alive(worker):
            kill_process(worker, signal.SIGKILL)


async def test_a_worker_whose_job_killed_its_shim_is_still_stopped_with_the_job(
    tmp_path: Path, state_dir: Path
) -> None:
    """With the shim gone the worker is in no group of the job's and below no process of it."""
    async with shim_killed(tmp_path, state_dir, "stay") as (agent, job, worker):
        shim = read_json(state_dir / "jobs" / job.id / "shim.json")
        assert isinstance(shim, dict)
        assert await gone_within(int(shim["pid"]), 10.0), "the job's kill never ended its shim"
        info = process_info(worker)
        assert info is not None
        assert info.pgid != job.pgid
        assert info.ppid != shim["pid"]
        result = await agent.call(JOBS_STOP, StopParams(job.id), idempotency_key="stop")
        assert result.outcome == "stopped", result
        assert not alive(worker), f"the worker {worker} outlived the stop of its job"


async def test_a_worker_left_by_a_job_that_killed_its_shim_and_ended_is_ended_unasked(
    tmp_path: Path, state_dir: Path
) -> None:
    """With its shim gone nobody ends what the job left: the job reads lost, its mark finds them."""
    async with shim_killed(tmp_path, state_dir) as (agent, job, worker):
        lost = await jobs_where(agent, lambda jobs: jobs[0].state == "lost")
        assert lost[0].id == job.id
        record = state_dir / "jobs" / job.id / "leftovers.json"
        await jobs_where(agent, lambda jobs: record.exists() and not alive(worker))
        assert read_json(record) == {"ended": 1, "at": pytest.approx(time.time(), abs=120)}
