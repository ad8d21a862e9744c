"""A redeploy is the agent's own operation: it ends on the new code or the old, never half-way.

The console asks once and may leave at once; the agent stops the job, swaps the staged file in,
starts it again and watches it run the new code, or puts the old file back and starts the old
code again. Real daemon, real jobs, real signals; the daemon itself is killed mid-way once.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.host.signals import kill_process
from agent.operations.redeploy import RUNNER_MODULE
from agent.protocol import (
    JOBS_LAUNCH,
    OPERATIONS_GENERATE,
    OPERATIONS_REDEPLOY,
    DatasetsConfig,
    GenerateParams,
    JobInfo,
    JobSpec,
    LaunchParams,
    OperationInfo,
    PipelineConfig,
    RedeployParams,
)
from agent.state import read_json
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from tests.support.datasets import write_prompts
from tests.support.operations import (
    jobs_now,
    jobs_where,
    local_link,
    observer_scans,
    operation_ended,
    operation_where,
    stage_upload,
    text_appears,
)

PY = sys.executable
WORKER = "# {version}\nimport signal, time\n{ignore}print('running {version}', flush=True)\ntime.sleep(600)\n"
BROKEN = b"import sys\nprint('running v2, broken', flush=True)\nsys.exit(1)\n"


def worker(version: str, *, deaf: bool = False) -> bytes:
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if deaf else ""
    return WORKER.format(version=version, ignore=ignore).encode()


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    (root / "worker.py").write_bytes(worker("v1"))
    return root


def config(tmp_path: Path, roots: Path, **spec: object) -> PipelineConfig:
    datasets = tmp_path / "datasets"
    for name in ("A", "B"):
        write_prompts(datasets / name, 2)
    script = str(roots / "worker.py")
    job = JobSpec((PY, script), grace_s=float(spec.pop("grace_s", 5.0)), **spec)  # type: ignore[arg-type]
    sleeper = JobSpec((PY, "-c", "import time; time.sleep(600)"), per_dataset=True,
                      kind="inference")  # fmt: skip
    return PipelineConfig(
        datasets=DatasetsConfig(str(datasets)), jobs={"worker": job, "sleeper": sleeper},
        deploy_roots=(str(roots),),
    )  # fmt: skip


@pytest.fixture
async def link(tmp_path: Path, roots: Path, state_dir: Path) -> AsyncIterator[AgentLink]:
    agent = await open_local_link(state_dir, config(tmp_path, roots, restart="on-failure",
                                                    restart_delay_s=0.1))  # fmt: skip
    yield agent
    await agent.close()


async def running_worker(link: AgentLink, version: str = "v1") -> JobInfo:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("worker"), idempotency_key="w1")
    await text_appears(Path(job.log_path or ""), f"running {version}")
    return job


async def redeploy(link: AgentLink, job: JobInfo, *files: object) -> OperationInfo:
    params = RedeployParams(job.id, files=files)  # type: ignore[arg-type]
    info: OperationInfo = await link.call(
        OPERATIONS_REDEPLOY, params, idempotency_key=f"r-{job.id}"
    )
    return info


async def test_a_redeploy_ends_on_the_new_code_though_its_console_left_at_once(
    link: AgentLink, roots: Path, state_dir: Path, tmp_path: Path
) -> None:
    job = await running_worker(link)
    started = await redeploy(link, job, stage_upload(roots / "worker.py", worker("v2")))
    await link.close()  # the console that asked is gone before the stop is done

    async with local_link(state_dir, config(tmp_path, roots)) as again:
        done = await operation_ended(again, started.id)
        jobs = {j.id: j for j in await jobs_now(again)}

    assert done.state == "done", done.outcome
    assert [(s.name, s.state) for s in done.steps] == [
        ("stop", "done"), ("deploy", "done"), ("start", "done"), ("watch", "done"),
    ]  # fmt: skip
    assert jobs[job.id].state == "stopped"
    new = jobs[done.new_job_id or ""]
    assert new.state == "running"
    await text_appears(Path(new.log_path or ""), "running v2")
    assert (roots / "worker.py").read_bytes() == worker("v2")


async def test_new_code_that_fails_is_rolled_back_and_the_old_code_runs_again(
    link: AgentLink, roots: Path
) -> None:
    job = await running_worker(link)
    started = await redeploy(link, job, stage_upload(roots / "worker.py", BROKEN))

    done = await operation_ended(link, started.id)

    assert done.state == "rolled_back", done.outcome
    assert "exit 1" in done.outcome
    assert "old code runs again" in done.outcome
    assert [s.name for s in done.steps] == ["stop", "deploy", "start", "watch", "roll back",
                                            "restart old"]  # fmt: skip
    assert (roots / "worker.py").read_bytes() == worker("v1")
    jobs = await jobs_where(link, lambda jobs: any(j.state == "running" for j in jobs))
    restored = [j for j in jobs if j.state == "running"]
    assert len(restored) == 1
    assert restored[0].id not in (job.id, done.new_job_id)
    await text_appears(Path(restored[0].log_path or ""), "running v1")
    failed = next(j for j in jobs if j.id == done.new_job_id)
    assert failed.state == "failed"
    assert failed.restart_of is None
    # its restart policy (on-failure, 0.1 s) stays out of it: the redeploy decided its fate
    await observer_scans(link, 5)
    assert not [j for j in await jobs_now(link) if j.restart_of == failed.id]


async def test_an_upload_that_does_not_match_is_refused_before_anything_stops(
    link: AgentLink, roots: Path
) -> None:
    job = await running_worker(link)
    staged = stage_upload(roots / "worker.py", worker("v2"))
    Path(staged.staged).write_bytes(b"tampered")

    with pytest.raises(AgentRequestError, match="nothing was stopped"):
        await redeploy(link, job, staged)

    [still] = await jobs_now(link)
    assert still.state == "running"
    assert (roots / "worker.py").read_bytes() == worker("v1")


async def test_a_redeploy_goes_on_after_the_daemon_is_killed_in_its_stop(
    tmp_path: Path, roots: Path, state_dir: Path
) -> None:
    deaf = config(tmp_path, roots, grace_s=3.0, term_grace_s=1.0)
    (roots / "worker.py").write_bytes(worker("v1", deaf=True))
    async with local_link(state_dir, deaf) as link:
        job = await running_worker(link)
        started = await redeploy(link, job, stage_upload(roots / "worker.py", worker("v2")))
        await operation_where(link, started.id, lambda i: any(s.name == "stop" for s in i.steps))
        kill_process(int(read_json(state_dir / "daemon.json")["pid"]), signal.SIGKILL)

    async with local_link(state_dir, deaf) as link:  # a new daemon, as after a crash
        done = await operation_ended(link, started.id)
        jobs = {j.id: j for j in await jobs_now(link)}
    assert done.state == "done", done.outcome
    assert jobs[job.id].state == "stopped"
    assert jobs[done.new_job_id or ""].state == "running"
    assert sum(1 for j in jobs.values() if j.state == "running") == 1


async def test_a_second_redeploy_of_the_same_job_is_refused_while_one_is_under_way(
    link: AgentLink, roots: Path
) -> None:
    job = await running_worker(link)
    first = await redeploy(link, job, stage_upload(roots / "worker.py", worker("v2")))
    params = RedeployParams(job.id, files=(stage_upload(roots / "worker.py", worker("v3")),))
    with pytest.raises(AgentRequestError, match="under way"):
        await link.call(OPERATIONS_REDEPLOY, params, idempotency_key="second")
    assert (await operation_ended(link, first.id)).state == "done"


async def test_generate_starts_every_dataset_and_says_which_were_refused(
    link: AgentLink,
) -> None:
    busy: JobInfo = await link.call(
        JOBS_LAUNCH, LaunchParams("sleeper", "A"), idempotency_key="already"
    )
    await jobs_where(link, lambda jobs: any(j.id == busy.id and j.pid for j in jobs))
    params = GenerateParams("sleeper", ("A", "B"))
    started: OperationInfo = await link.call(OPERATIONS_GENERATE, params, idempotency_key="g")

    done = await operation_ended(link, started.id)

    assert done.state == "done"
    assert "started sleeper on 1 of 2" in done.outcome
    assert "refused: A" in done.outcome
    steps = {s.name: s for s in done.steps}
    assert steps["A"].state == "failed"
    assert busy.id in steps["A"].detail
    assert steps["B"].state == "done"
    jobs = await jobs_now(link)
    assert sorted(j.dataset or "" for j in jobs if j.name == "sleeper") == ["A", "B"]


async def test_a_roll_back_that_cannot_put_the_files_back_says_so_and_starts_nothing(
    link: AgentLink, roots: Path, tmp_path: Path
) -> None:
    """An apply narrowed deploy_roots while the new code ran: the roll back cannot put the old
    file back, and the outcome said "the old code runs again" with the new code on disk.

    The new run names the runner module in its argv, so the watch waits for a runner's report
    rather than settling on "running" at once: the new code fails only after the apply, whatever
    the machine's speed (a plain worker let the watch say "done" first on a slow CI machine)."""
    job = await running_worker(link)
    flag = tmp_path / "fail-now"
    waits_then_fails = (
        f"import pathlib, sys, time\nprint('running v2, waiting', flush=True)\n"
        f"while not pathlib.Path({str(flag)!r}).exists(): time.sleep(0.05)\nsys.exit(1)\n"
    ).encode()
    as_a_runner = (PY, str(roots / "worker.py"), RUNNER_MODULE)
    params = RedeployParams(job.id, argv=as_a_runner,
                            files=(stage_upload(roots / "worker.py", waits_then_fails),))  # fmt: skip
    started: OperationInfo = await link.call(
        OPERATIONS_REDEPLOY, params, idempotency_key="r-narrow"
    )
    running = await operation_where(link, started.id, lambda info: info.new_job_id is not None)
    [new] = [j for j in await jobs_now(link) if j.id == running.new_job_id]
    await text_appears(Path(new.log_path or ""), "running v2, waiting")
    (tmp_path / "elsewhere").mkdir()
    narrowed = replace(config(tmp_path, roots), deploy_roots=(str(tmp_path / "elsewhere"),))
    await link.apply_pipeline(narrowed)
    flag.touch()

    done = await operation_ended(link, started.id)

    assert done.state == "failed", done.outcome
    assert "the roll back failed" in done.outcome
    assert "the new code is still on disk, so the job was not started again" in done.outcome
    assert (roots / "worker.py").read_bytes() == waits_then_fails
    assert not [j for j in await jobs_now(link) if j.state == "running"], "nothing on mixed code"


async def test_a_record_of_another_shape_ends_failed_and_blocks_nothing(
    link: AgentLink, roots: Path, state_dir: Path, tmp_path: Path
) -> None:
    """A redeploy record whose params this agent cannot read, left under way on a live job: it
    read "running" forever and every redeploy of the job was refused (operation_busy)."""
    job = await running_worker(link)
    kill_process(int(read_json(state_dir / "daemon.json")["pid"]), signal.SIGKILL)
    await link.close()
    older = {
        "id": "redeploy-20260101-000000-aaaaaa", "kind": "redeploy", "subject": "worker",
        "params": {"job_id": job.id, "files": [["worker.py", "staged"]]}, "started_at": 1.0,
        "asked_by": None, "phase": "watch", "state": "running", "ended_at": None, "outcome": "",
        "job_id": job.id, "new_job_id": job.id, "notes": {}, "steps": [],
    }  # fmt: skip
    (state_dir / "operations" / f"{older['id']}.json").write_text(json.dumps(older))

    same = config(tmp_path, roots, restart="on-failure", restart_delay_s=0.1)
    async with local_link(state_dir, same) as again:
        done = await operation_ended(again, str(older["id"]))
        started = await redeploy(again, job, stage_upload(roots / "worker.py", worker("v2")))
        after = await operation_ended(again, started.id)

    assert done.state == "failed"
    assert "does not read" in done.outcome
    assert "Nothing was done" in done.outcome
    assert after.state == "done", after.outcome
