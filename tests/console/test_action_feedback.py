"""Every action says what it did, truthfully: a launch's pid, many finished runs in one toast,
and the deploy screen showing the host's files as they are after a deploy or a rollback.

Once: "started inference on B1 (pid None)"; a toast per finished run; the deploy screen closed
after a deploy, stayed "unchanged" after a rollback, and `b` again "rolled back" an identical file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from textual.widgets import DataTable

from agent.protocol import (
    Alert,
    DatasetProgress,
    DatasetsConfig,
    Event,
    HelloResult,
    JobInfo,
    JobSpec,
    PipelineConfig,
)
from console.config import DeployMapping, HostConfig, SshTarget
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.deploy import DeployScreen
from tests.support.fixed_app import SIZE
from tests.support.local_host_app import configured_app
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent
from tests.support.shown_app import up_with
from tests.support.toasts import toasts

RUNNER = JobSpec(("python", "-m", "runner", "{dataset_dir}"), kind="inference", per_dataset=True)
PENDING = DatasetProgress("B4_code", 30, 0, 0, 10_000, status="pending")


def agent_with(results: dict[str, object]) -> ScriptedAgent:
    return ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), results, file_content=b"")


async def test_a_launch_without_a_pid_yet_says_it_is_starting() -> None:
    starting = JobInfo("inference-B4", "inference", "inference", "starting", (), dataset="B4_code")
    agent = agent_with({"jobs.launch": starting})
    pipeline = PipelineConfig(jobs={"inference": RUNNER})
    config = HostConfig("gpu", SshTarget("local"), pipeline=pipeline)
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW, host_configs={"gpu": config})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, dataclasses.replace(SNAPSHOT, datasets=(PENDING,), jobs=()))
        app.screen.query_one("#datasets").focus()
        await pilot.press("g")
        await wait_for(pilot, lambda: any(t.startswith("started inference") for t in toasts(app)))
        said = next(t for t in toasts(app) if t.startswith("started inference"))
        assert "None" not in said
        assert "B4_code (starting" in said
        running = dataclasses.replace(starting, state="running", pid=4321)
        agent.push(Event("snapshot", dataclasses.replace(SNAPSHOT, jobs=(running,))))
        told = "gpu: inference on B4_code runs as pid 4321"
        await wait_for(pilot, lambda: told in toasts(app))


async def test_many_runs_finishing_at_once_make_one_toast() -> None:
    agent = agent_with({})
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW)
    finished = tuple(
        Alert("job_exited", "info", f"job inference (B{i}) finished (exited, code 0)", f"j{i}", NOW)
        for i in range(1, 7)
    )
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, dataclasses.replace(SNAPSHOT, alerts=()))
        app.clear_notifications()
        for batch in (finished[:2], finished):  # they end a snapshot or two apart
            agent.push(Event("snapshot", dataclasses.replace(SNAPSHOT, alerts=batch)))
        await wait_for(pilot, lambda: any("finished" in t for t in toasts(app)))
        await pilot.pause(0.5)
        said = [t for t in toasts(app) if "finished" in t]
        assert len(said) == 1, said
        assert said[0].startswith("gpu: 6 × job exited: job inference (B1) finished")
        assert "and 3 more" in said[0]


def deploy_rows(app: ConsoleApp) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_deploy_and_rollback_refresh_the_deploy_screen_and_an_identical_rollback_says_so(
    tmp_path: Path, state_dir: Path
) -> None:
    local, remote = tmp_path / "local" / "run.py", tmp_path / "remote" / "run.py"
    local.parent.mkdir()
    remote.parent.mkdir()
    local.write_text("print('new')\n")
    remote.write_text("print('old')\n")
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(tmp_path / "datasets")), deploy_roots=(str(remote.parent),)
    )
    app = configured_app(state_dir, pipeline, deploy=(DeployMapping(local, str(remote)),))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].state.status == "up")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, DeployScreen))
        assert deploy_rows(app) == ["changed"]
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: isinstance(app.screen, DeployScreen))
        await wait_for(pilot, lambda: deploy_rows(app) == ["unchanged"])
        assert remote.read_text() == "print('new')\n"
        await pilot.press("b")
        await wait_for(pilot, lambda: any(t.startswith("rolled back") for t in toasts(app)))
        await wait_for(pilot, lambda: deploy_rows(app) == ["changed"])  # the host has the old file
        assert remote.read_text() == "print('old')\n"
        app.clear_notifications()
        await pilot.press("b")
        await wait_for(pilot, lambda: any("nothing to roll back" in t for t in toasts(app)))
        assert not any(t.startswith("rolled back") for t in toasts(app))
        assert isinstance(app.screen, DeployScreen)
        assert deploy_rows(app) == ["changed"]


async def test_h_with_one_host_says_how_to_watch_more() -> None:
    agent = agent_with({})
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.views["gpu"].state.status == "up")
        await pilot.press("h")
        await wait_for(pilot, lambda: any("only host" in t for t in toasts(app)))
        [said] = [t for t in toasts(app) if "only host" in t]
        assert "[hosts.NAME]" in said
        assert app.current == "gpu"
