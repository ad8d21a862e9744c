"""t, k and the watch for a job across boxes, in the dashboard with two agents.

The parts here are plain Python (torchrun itself is in tests/e2e/test_jobs_across_boxes.py): what
is tested is that t starts a part on every box, k stops every box's part, and a part that fails
makes the console stop the one still running.
"""

from __future__ import annotations

import sys
from pathlib import Path

from textual.pilot import Pilot

from agent.protocol import JobInfo, JobSpec, PipelineConfig
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from tests.support.local_app import SIZE
from tests.support.screen import cell, wait_for

PART = (
    "import sys, time\n"
    "if sys.argv[1] == '1' and sys.argv[2] == 'fail':\n"
    "    time.sleep(1); print('node 1: out of memory', flush=True); sys.exit(1)\n"
    "time.sleep(120)\n"
)


def app_for(tmp_path: Path, mode: str) -> ConsoleApp:
    spec = JobSpec((sys.executable, "-c", PART, "{node_rank}", mode), kind="train", grace_s=5,
                   nodes=("a", "b"))  # fmt: skip
    pipeline = PipelineConfig(jobs={"train": spec})
    configs = {name: HostConfig(name, SshTarget("local"), pipeline=pipeline) for name in "ab"}

    def opener(name: str):  # type: ignore[no-untyped-def]
        async def open_it() -> AgentLink:
            return await open_local_link(tmp_path / f"state-{name}", pipeline)

        return open_it

    return ConsoleApp({name: opener(name) for name in "ab"}, host_configs=configs)


def parts(app: ConsoleApp) -> dict[str, JobInfo]:
    found = {}
    for host in "ab":
        snapshot = app.views[host].snapshot
        jobs = [j for j in snapshot.jobs if j.name == "train"] if snapshot else []
        if jobs:
            found[host] = jobs[-1]
    return found


def states(app: ConsoleApp) -> dict[str, str]:
    return {host: job.state for host, job in parts(app).items()}


async def press_t(pilot: Pilot[None], app: ConsoleApp) -> None:
    """Once both boxes are heard from, t."""
    await wait_for(pilot, lambda: app.views["b"].snapshot is not None)
    await pilot.press("t")


async def test_t_starts_every_part_and_a_failed_one_stops_the_other(boxes: Path) -> None:
    app = app_for(boxes, "fail")
    async with app.run_test(size=SIZE) as pilot:
        await press_t(pilot, app)
        await wait_for(pilot, lambda: states(app) == {"a": "stopped", "b": "failed"})
        shown = parts(app)
        assert shown["a"].node is not None
        assert shown["b"].node is not None
        assert shown["a"].node.rdzv_id == shown["b"].node.rdzv_id
        assert cell(app, "jobs", shown["a"].id, "origin") == "node 0/2"
        said = " ".join(str(n.message) for n in app._notifications)
        assert (
            "train: node 1 on b failed (exit 1: node 1: out of memory): stopping node 0 on a"
            in said
        )


async def test_k_on_one_part_stops_every_box(boxes: Path) -> None:
    app = app_for(boxes, "sleep")
    async with app.run_test(size=SIZE) as pilot:
        await press_t(pilot, app)
        await wait_for(pilot, lambda: states(app) == {"a": "running", "b": "running"})
        await wait_for(pilot, lambda: cell(app, "jobs", parts(app)["a"].id, "state") == "running")
        app.screen.query_one("#jobs").focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        text = str(app.screen.query_one("#confirm-text").render())
        assert "train across 2 boxes" in text
        assert "node 0 a running · node 1 b running" in text
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: states(app) == {"a": "stopped", "b": "stopped"})
