"""The guide's scale-out config (docs/getting-started.md §5) runs as it is written.

The config is read from the guide and loaded by the console's own loader, so a key the loader
refuses fails here. To run three boxes on one machine, only what has to change does: each box's
address and port become a loopback port of its own, the folders become temporary ones, and
SGLang's `launch_server` (the GPU) becomes the simulator, given the flags it shares with SGLang.
The router is the real sglang-router; every box gets its own agent, as on a fleet.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.protocol import (
    JOBS_LAUNCH,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    from_wire,
    to_wire,
)
from agent.simulator.tokenizer import build_tokenizer
from agent.state import StatePaths
from console.config import HostConfig, load_config
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.datasets import write_prompts
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.operations import jobs_where, snapshot_where
from tests.support.ports import free_port
from tests.support.repo import REPO
from tests.support.router_process import require_router

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GUIDE = REPO / "docs" / "getting-started.md"
SECTION = "## 5. When one box is not enough"
WORKERS = {"gpu1": "10.1.230.11", "gpu2": "10.1.230.12"}
BUDGET = 4000
SIMULATED_GPU = ("--speed", "20", "--mean-tokens", "80", "--sd-tokens", "30")
"""Flags of the simulator's own: a fast target, so the run meets its budget in seconds."""
NOT_FOR_THE_SIMULATOR = {"--tp-size": 1, "--trust-remote-code": 0}
"""SGLang's flags the simulator has no use for, with how many values each takes."""


def guide_config(folder: Path) -> Path:
    """The guide's scale-out TOML block, written to a file of its own."""
    section = GUIDE.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```toml\n(.*?)```", section, re.S)
    path = folder / "eagle-console.toml"
    path.write_text(block)
    return path


class Fleet:
    """Where each box of the guide lives on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = {name: free_port() for name in (*WORKERS, "head", "head-metrics")}
        self.tokenizer = build_tokenizer(root / "tokenizer")
        self.datasets = root / "datasets"

    def replacements(self, host: str) -> dict[str, str]:
        """What a box's config says that this machine has elsewhere."""
        own = self.ports["head" if host == "head" else host]
        moves = {f"{address}:30000": f"127.0.0.1:{self.ports[name]}"
                 for name, address in WORKERS.items()}  # fmt: skip
        return moves | {
            "127.0.0.1:30000": f"127.0.0.1:{own}",
            '"30000"': f'"{own}"',
            '"29000"': f'"{self.ports["head-metrics"]}"',
            '"0.0.0.0"': '"127.0.0.1"',
            "/data/eagle3/datasets": str(self.datasets),
            "/models/kimi-k2": str(self.tokenizer),
            '"budget": 10000000': f'"budget": {BUDGET}',
        }

    def pipeline(self, host: HostConfig) -> PipelineConfig:
        """The box's pipeline as it runs here (every placeholder left for the agent to fill)."""
        text = json.dumps(to_wire(host.pipeline))
        for old, new in self.replacements(host.name).items():
            text = text.replace(old, new)
        pipeline = from_wire(PipelineConfig, json.loads(text))
        jobs = {name: _here(spec) for name, spec in pipeline.jobs.items()}
        return replace(pipeline, jobs=jobs)


def _here(spec: JobSpec) -> JobSpec:
    """A job as this machine runs it: the simulator for SGLang, the router offline."""
    argv = list(spec.argv)
    if "sglang.launch_server" in argv:
        argv[argv.index("sglang.launch_server")] = "agent.simulator"
        for flag, values in NOT_FOR_THE_SIMULATOR.items():
            at = argv.index(flag)
            del argv[at : at + 1 + values]
        return replace(spec, argv=(*argv, *SIMULATED_GPU))
    if "sglang_router.launch_router" in argv:  # this machine has no network to reach for
        return replace(spec, env={**spec.env, "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"})
    return spec


@pytest.fixture
async def boxes(tmp_path: Path) -> AsyncIterator[dict[str, AgentLink]]:
    """An agent per box of the guide, each with its own state folder."""
    require_router()
    hosts = load_config(guide_config(tmp_path))
    fleet = Fleet(tmp_path)
    write_prompts(fleet.datasets / "B1_chat", 400)
    states = {name: tmp_path / f"state-{name}" for name in ("head", *WORKERS)}
    async with AsyncExitStack() as stack:
        links = {}
        for name, state in states.items():
            link = await open_local_link(state, fleet.pipeline(hosts.host(name)))
            stack.push_async_callback(link.close)
            links[name] = link
        try:
            yield links
        finally:
            for state in states.values():  # the daemon first: it would restart what is killed
                stop_daemon(StatePaths(state))
                kill_leftover_jobs(state)


async def launch(link: AgentLink, job: str, dataset: str | None = None) -> JobInfo:
    info: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams(job, dataset), idempotency_key=job)
    return info


def generated_tokens(port: int) -> float:
    """The generation tokens a worker's /metrics counts."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("sglang:generation_tokens_total"))  # fmt: skip


def test_the_guide_names_every_box_it_describes(tmp_path: Path) -> None:
    hosts = load_config(guide_config(tmp_path))
    head = hosts.host("head").pipeline
    assert head.sglang_api == "sglang", "behind the router only --api sglang keeps exact ids"
    assert set(head.jobs) == {"router", "inference"}
    router = head.jobs["router"].argv
    for address in WORKERS.values():
        assert f"http://{address}:30000" in router
    for name in WORKERS:
        assert hosts.host(name).pipeline.jobs["sglang"].gpu


async def test_the_guide_fleet_runs_one_budget_over_two_workers(
    boxes: dict[str, AgentLink],
) -> None:
    for name in WORKERS:
        await launch(boxes[name], "sglang")
    for name in WORKERS:
        await snapshot_where(
            boxes[name], lambda s: s.server is not None and s.server.healthy is True
        )
    await launch(boxes["head"], "router")
    fronted = await snapshot_where(
        boxes["head"],
        lambda s: s.server is not None and s.server.is_router and s.server.healthy_workers == 2,
    )
    assert fronted.server is not None
    assert len(fronted.server.parts) == 2

    run = await launch(boxes["head"], "inference", "B1_chat")
    ended = await jobs_where(
        boxes["head"],
        lambda jobs: any(j.id == run.id and j.state not in ("starting", "running") for j in jobs),
        timeout_s=180,
    )
    [job] = [j for j in ended if j.id == run.id]
    assert (job.state, job.exit_code) == ("exited", 0), Path(job.log_path or "").read_text()[-2000:]
    done = await snapshot_where(
        boxes["head"], lambda s: bool(s.datasets) and s.datasets[0].tokens > 0
    )
    [dataset] = done.datasets
    assert dataset.budget == BUDGET
    assert dataset.tokens >= BUDGET, "the run ends at its budget, counted on the head"
    for url in (part.name for part in fronted.server.parts):  # the router's workers, by URL
        assert generated_tokens(int(url.rsplit(":", 1)[1])) > 0, f"{url} served nothing"
