"""R and d in the app: the modal's numbers match the agent's, and confirming moves to the new code."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    DatasetsConfig,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from console.config import DeployMapping
from console.link.local_link import open_local_link
from console.ui.app import ConsoleApp
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.deploy import DeployScreen, DiffScreen
from console.ui.screens.redeploy import RedeployScreen
from tests.support.local_app import SIZE
from tests.support.local_host_app import configured_app
from tests.support.repo import REPO, old_runner_copy
from tests.support.runner_files import write_id_prompts
from tests.support.screen import cell, wait_for
from tests.support.simulator_process import running_simulator


def alert_kinds(app: ConsoleApp) -> set[str]:
    snapshot = app.views["gpu"].snapshot
    return {alert.kind for alert in snapshot.alerts} if snapshot is not None else set()


@pytest.mark.slow
async def test_r_redeploys_the_selected_runner_onto_the_new_code(
    tmp_path: Path, state_dir: Path
) -> None:
    datasets, remote_root = tmp_path / "datasets", tmp_path / "remote"
    write_id_prompts(datasets / "B1_sharegpt", 2000)
    app_dir = old_runner_copy(remote_root)
    with running_simulator(
        tmp_path / "sim", "--speed", "3", "--mean-tokens", "120", "--sd-tokens", "30"
    ) as sim:
        pipeline = PipelineConfig(
            datasets=DatasetsConfig(str(datasets), budget=10_000_000), sglang_url=sim.url,
            deploy_roots=(str(remote_root),),
            jobs={"inference": JobSpec(
                ("{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}",
                 "--dataset-dir", "{dataset_dir}", "--concurrency", "4"),
                kind="inference", per_dataset=True, stop_signal="SIGINT", grace_s=20,
                env={"PYTHONPATH": str(app_dir)},
            )},
        )  # fmt: skip
        launcher = await open_local_link(state_dir, pipeline)
        job = await launcher.call(
            JOBS_LAUNCH, LaunchParams("inference", "B1_sharegpt"), idempotency_key="old"
        )
        await launcher.close()
        inference = Path("agent", "pipeline", "inference")
        app = configured_app(
            state_dir, pipeline, (DeployMapping(REPO / inference, str(app_dir / inference)),)
        )
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: cell(app, "jobs", job.id, "state").startswith("running"))
            await wait_for(pilot, lambda: "stale_code" in alert_kinds(app))
            await wait_for(
                pilot, lambda: cell(app, "jobs", job.id, "state") == "running · stale code"
            )
            await pilot.press("d")
            await wait_for(pilot, lambda: isinstance(app.screen, DeployScreen))
            title = str(app.screen.query_one("#deploy-title").render())
            assert "1 file(s) to deploy" in title
            assert "(the host runs it)" in title
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, DeployScreen))
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
            app.screen.query_one("#jobs").focus()
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, RedeployScreen))
            modal = app.screen
            assert modal.focused is not None
            assert modal.focused.id == "cancel"
            text = str(modal.query_one("#confirm-text").render())
            snapshot = app.views["gpu"].snapshot
            assert snapshot is not None
            running = next(j for j in snapshot.jobs if j.id == job.id)
            dataset = snapshot.datasets[0]
            assert f"pid {running.pid}" in text
            assert "B1_sharegpt:" in text
            assert f"changed: {app_dir / 'agent' / 'pipeline' / 'inference' / 'status.py'}" in text
            # by key, as a keyboard user confirms: the modal follows live snapshots, and a click
            # aimed at a button laid out before one arrived can land beside it on a loaded machine
            modal.query_one("#confirm").focus()
            await pilot.press("enter")
            await wait_for(
                pilot,
                lambda: (
                    app.views["gpu"].snapshot is not None
                    and not app.views["gpu"].snapshot.datasets[0].stale_code
                    and any(
                        j.name == "inference" and j.id != job.id and j.state == "running"
                        for j in app.views["gpu"].snapshot.jobs
                    )
                ),
                timeout_s=90,
            )
            assert dataset.responses <= app.views["gpu"].snapshot.datasets[0].responses  # type: ignore[union-attr]
            for live in app.views["gpu"].snapshot.jobs:  # type: ignore[union-attr]
                if live.state == "running":
                    await app.connections["gpu"].link.call(  # type: ignore[union-attr]
                        JOBS_STOP,
                        StopParams(live.id),
                        idempotency_key=f"cleanup-{live.id}",
                        timeout_s=60,
                    )
