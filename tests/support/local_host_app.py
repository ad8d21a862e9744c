"""The console app over a real agent on this machine, its host configured (`ssh = "local"`), as
the keys that act on the host's config need."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.protocol import JOBS_STOP, PipelineConfig, StopParams
from console.config import DeployMapping, HostConfig, SshTarget
from console.ui.app import ConsoleApp
from tests.support.local_app import local_opener


def configured_app(
    state_dir: Path, pipeline: PipelineConfig, deploy: tuple[DeployMapping, ...] = ()
) -> ConsoleApp:
    """The app with one host, `gpu`: the agent of `state_dir`, configured with `pipeline`."""
    host = HostConfig(
        "gpu",
        SshTarget("local"),
        python=sys.executable,
        state_dir=str(state_dir),
        pipeline=pipeline,
        deploy=deploy,
    )
    return ConsoleApp({"gpu": local_opener(state_dir, pipeline)}, host_configs={"gpu": host})


async def stop_live_jobs(app: ConsoleApp) -> None:
    """Stop every job of `gpu` the app last heard starting or running, over the app's own link."""
    link = app.connections["gpu"].link
    snapshot = app.views["gpu"].snapshot
    assert link is not None
    for job in snapshot.jobs if snapshot else ():
        if job.state in ("starting", "running"):
            stop = StopParams(job.id)
            await link.call(JOBS_STOP, stop, idempotency_key=f"end-{job.id}", timeout_s=60)
