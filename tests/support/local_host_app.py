"""The console app over a real agent on this machine with its host configured (`ssh = "local"`):
what the keys that act on the host's config (its jobs, its deploy mappings) need."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.protocol import PipelineConfig
from console.config import DeployMapping, HostConfig, SshTarget
from console.link.agent_link import AgentLink
from console.link.host_connection import Opener
from console.link.local_link import open_local_link
from console.ui.app import ConsoleApp


def local_opener(state_dir: Path, pipeline: PipelineConfig | None) -> Opener:
    """Opens a link to the agent of `state_dir`, started with `pipeline` if none runs."""

    async def opener() -> AgentLink:
        return await open_local_link(state_dir, pipeline)

    return opener


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
