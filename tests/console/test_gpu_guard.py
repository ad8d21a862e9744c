"""The GPU guard: a GPU job waits for the GPUs, and `t` offers to stop the holder first."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from console.link.agent_link import AgentRequestError
from console.link.local_link import open_local_link
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from tests.support.local_app import SIZE
from tests.support.local_host_app import configured_app
from tests.support.operations import local_link
from tests.support.screen import cell, wait_for
from tests.support.toasts import record_toasts

NAP = (sys.executable, "-c", "import time; time.sleep(120)")
JOBS = {
    "sglang": JobSpec(NAP, kind="server", gpu=True, grace_s=5),
    "train": JobSpec(NAP, kind="train", gpu=True, grace_s=5),
    "vocab": JobSpec(NAP, kind="vocab", gpu=False, grace_s=5),
}


async def test_a_gpu_job_is_refused_while_another_holds_the_gpus(state_dir: Path) -> None:
    async with local_link(state_dir, PipelineConfig(jobs=JOBS)) as link:
        server: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("sglang"), idempotency_key="s1")
        vocab: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("vocab"), idempotency_key="v1")
        with pytest.raises(AgentRequestError) as caught:
            await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="t1")
        assert caught.value.code == "gpu_busy"
        assert f"sglang ({server.id})" in caught.value.detail
        await link.call(JOBS_STOP, StopParams(server.id), idempotency_key="stop-s1", timeout_s=60)
        train: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("train"), idempotency_key="t2")
        for job in (vocab, train):
            await link.call(
                JOBS_STOP, StopParams(job.id), idempotency_key=f"stop-{job.id}", timeout_s=60
            )
    assert train.name == "train"


async def test_t_offers_to_stop_the_server_first(state_dir: Path) -> None:
    launcher = await open_local_link(state_dir, PipelineConfig(jobs=JOBS))
    server: JobInfo = await launcher.call(JOBS_LAUNCH, LaunchParams("sglang"), idempotency_key="s")
    await launcher.close()
    app = configured_app(state_dir, PipelineConfig(jobs=JOBS))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: cell(app, "jobs", server.id, "state") == "running")
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "sglang" in str(app.screen.query_one("#confirm-text").render())
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: cell(app, "jobs", server.id, "state") == "stopped")
        await wait_for(
            pilot,
            lambda: any(j.name == "train" and j.state == "running" for j in running_jobs(app)),
        )
        link = app.connections["gpu"].link
        assert link is not None
        for job in running_jobs(app):
            await link.call(
                JOBS_STOP, StopParams(job.id), idempotency_key=f"end-{job.id}", timeout_s=60
            )


def running_jobs(app: ConsoleApp) -> list[JobInfo]:
    snapshot = app.views["gpu"].snapshot
    return [j for j in snapshot.jobs if j.state == "running"] if snapshot else []


@pytest.mark.slow
async def test_s_starts_the_server_says_when_it_is_ready_and_stops_it(state_dir: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    simulator = JobSpec(
        ("{python}", "-m", "agent.simulator", "--port", str(port), "--model-path", "org/target"),
        kind="server", gpu=True, grace_s=5,
    )  # fmt: skip
    pipeline = PipelineConfig(sglang_url=f"http://127.0.0.1:{port}", jobs={"sglang": simulator})

    app = configured_app(state_dir, pipeline)
    said = record_toasts(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is not None)
        await pilot.press("s")
        await wait_for(
            pilot,
            lambda: any("ready at" in line and "org/target" in line for line in said),
            timeout_s=60,
        )
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: not running_jobs(app))
