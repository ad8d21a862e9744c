"""The real console app over a real agent on this machine (`open_local_link`), and a stand-in
runner for its generation keys."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.protocol import JobInfo, JobSpec, PipelineConfig
from console.link.agent_link import AgentLink
from console.link.host_connection import Opener
from console.link.local_link import open_local_link
from console.ui.app import ConsoleApp

SIZE = (170, 50)


def local_opener(state_dir: Path, pipeline: PipelineConfig | None) -> Opener:
    """Opens a link to the agent of `state_dir`, started with `pipeline` if none runs."""

    async def opener() -> AgentLink:
        return await open_local_link(state_dir, pipeline)

    return opener


def make_app(state_dir: Path, config: PipelineConfig) -> ConsoleApp:
    """The app with one host, `gpu`: the agent of `state_dir`, started if none runs."""
    return ConsoleApp({"gpu": local_opener(state_dir, config)})


RUNNER = JobSpec(
    (sys.executable, "-c", "import sys, time; time.sleep(120)", "{dataset}"),
    kind="inference", per_dataset=True, grace_s=5,
)  # fmt: skip


def live_jobs(app: ConsoleApp) -> list[JobInfo]:
    """The jobs `gpu` runs, as the app last heard."""
    snapshot = app.views["gpu"].snapshot
    return [j for j in snapshot.jobs if j.state == "running"] if snapshot else []
