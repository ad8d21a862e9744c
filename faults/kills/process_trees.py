"""Jobs are their whole process tree, and no stop signals a group no job has.

Trials, each with a real agent daemon:
- a job whose main process starts a worker that calls setsid (or a double-forked one, or one that
  stays in its group) and exits at once; the worker must not outlive the job;
- a job that starts a setsid worker and SIGKILLs its own shim, then `k`: the worker is stopped;
- the same jobs stopped with `k` while main and worker run; nothing of the tree may be left;
- a job folder as a daemon killed mid-launch leaves it (job.json and child.json of a live process,
  no shim.json), then `k` on it: the process is stopped and the daemon lives (it used to
  killpg(0) its own group).
Figures: processes left behind (each a violation), daemon deaths, time from `k` to the answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent.host.procfs import boot_id, process_info, start_ticks
from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    LIVE_JOB_STATES,
    PING,
    JobSpec,
    LaunchParams,
    PingParams,
    PipelineConfig,
    StopParams,
)
from faults.harness.agents import local_agent
from faults.result import Scale, ScenarioResult
from tests.support.operations import jobs_where, text_appears

TITLE = "Process trees: workers that leave their job's group, and jobs half launched"
MODES = ("setsid", "double_fork", "group", "kills_shim")
"""kills_shim: a double-forked setsid worker, then the job SIGKILLs its shim (the subreaper that
held the worker below it); found by the job's mark. Stopped with k here; one that then ends by
itself reads lost and its worker is ended by the lost job's sweep (tests/agent/test_job_trees.py)."""
WORKER = """import os, sys, time
mode, pid_file, stay = sys.argv[1], sys.argv[2], sys.argv[3] == "stay"
if mode in ("setsid", "double_fork", "kills_shim") and os.fork() == 0:
    if mode in ("setsid", "kills_shim"):
        os.setsid()
    if mode in ("double_fork", "kills_shim") and os.fork() != 0:
        os._exit(0)
    open(pid_file + ".tmp", "w").write(str(os.getpid()))
    os.rename(pid_file + ".tmp", pid_file)
    time.sleep(600)
if mode == "group" and os.fork() == 0:
    open(pid_file + ".tmp", "w").write(str(os.getpid()))
    os.rename(pid_file + ".tmp", pid_file)
    time.sleep(600)
while not os.path.exists(pid_file):
    time.sleep(0.01)
if mode == "kills_shim":
    os.kill(os.getppid(), 9)
print("worker started", flush=True)
if stay:
    time.sleep(600)
"""


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Each mode, ended by itself and stopped; then half-launched folders."""
    result = ScenarioResult("process_trees", TITLE, seed)
    rounds = scale.pick(full=5, quick=1)
    script = workdir / "leaves_a_worker.py"
    script.write_text(WORKER)
    left: list[str] = []
    stops_s: list[float] = []
    for index in range(rounds):
        for mode in MODES:
            for stay in ("exits", "stay") if mode != "kills_shim" else ("stay",):
                await _tree_trial(result, workdir / f"{mode}-{stay}-{index}", script, mode, stay,
                                  left, stops_s)  # fmt: skip
        await _half_launched_trial(result, workdir / f"half-{index}", stops_s)
    result.notes.append(
        f"{result.attempted} trials ({rounds} round(s) of {len(MODES)} worker kinds, ended by "
        f"the job and stopped with k, and a half-launched job): {len(left)} process(es) left "
        f"behind; k answered in {min(stops_s):.2f}-{max(stops_s):.2f} s"
    )
    return result


async def _tree_trial(
    result: ScenarioResult, folder: Path, script: Path, mode: str, stay: str,
    left: list[str], stops_s: list[float],
) -> None:  # fmt: skip
    folder.mkdir(parents=True)
    pid_file = folder / "worker.pid"
    spec = JobSpec((sys.executable, str(script), mode, str(pid_file), stay), grace_s=2.0)
    name = f"{mode}/{stay}"
    async with local_agent(folder / "state", PipelineConfig(jobs={"tree": spec})) as link:
        job = await link.call(JOBS_LAUNCH, LaunchParams("tree"), idempotency_key="tree")
        await text_appears(Path(job.log_path or ""), "worker started")
        worker = int(pid_file.read_text())
        result.faults += 1
        result.attempted += 1
        if stay == "stay":
            started = time.monotonic()
            await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="k", timeout_s=60)
            stops_s.append(time.monotonic() - started)
        await jobs_where(link, lambda jobs: jobs[0].state not in LIVE_JOB_STATES)
        if _alive(worker):
            left.append(name)
            result.lost += 1
            result.violate(f"{name}: worker {worker} outlived its job")
            kill_process(worker, signal.SIGKILL)
        else:
            result.acknowledged += 1


async def _half_launched_trial(result: ScenarioResult, folder: Path, stops_s: list[float]) -> None:
    state = folder / "state"
    job_dir = state / "jobs" / "half-20261204-000000"
    job_dir.mkdir(parents=True, mode=0o700)
    os.chmod(state, 0o700)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)  # fmt: skip
    try:
        job = {"id": job_dir.name, "name": "half", "argv": ["x"], "launched_at": time.time(),
               "stop_signal": "SIGTERM", "grace_s": 2}  # fmt: skip
        child = {"pid": sleeper.pid, "start_ticks": start_ticks(sleeper.pid), "boot_id": boot_id()}
        (job_dir / "job.json").write_text(json.dumps(job))
        (job_dir / "child.json").write_text(json.dumps(child))
        async with local_agent(state, PipelineConfig()) as link:
            result.faults += 1
            result.attempted += 1
            started = time.monotonic()
            stopped = await link.call(JOBS_STOP, StopParams(job_dir.name), idempotency_key="k")
            stops_s.append(time.monotonic() - started)
            await link.call(
                PING, PingParams()
            )  # the daemon lives: it signalled no group of its own
            gone = sleeper.wait(timeout=30) == -signal.SIGTERM
            if stopped.outcome == "stopped" and gone:
                result.acknowledged += 1
            else:
                result.violate(f"half-launched job: {stopped.outcome}, process ended {gone}")
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        sleeper.wait()


def _alive(pid: int) -> bool:
    info = process_info(pid)
    return info is not None and info.alive
