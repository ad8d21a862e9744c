"""The real app, driven as a person would (Pilot), against a real agent on this machine."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from agent.host.signals import kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from agent.state import read_json
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink, LinkError
from console.link.local_link import open_local_link
from console.link.ssh_link import open_ssh_link
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dashboard import DashboardScreen
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.logs import LogScreen
from console.ui.screens.pipeline import PipelineScreen
from tests.support.datasets import response_line
from tests.support.local_app import SIZE, local_opener, make_app
from tests.support.screen import cell, header, wait_for
from tests.support.ssh_servers import asyncssh_server
from tests.support.toasts import toasts

MakeApp = Callable[[Path, PipelineConfig], ConsoleApp]


@pytest.fixture(params=["local", "ssh"])
async def app_factory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MakeApp]:
    """The app over a local agent, or over the loopback asyncssh server."""
    if request.param == "local":
        yield make_app
        return
    async with asyncssh_server(tmp_path / "ssh") as server:
        endpoint = server.endpoint

        def over_ssh(state_dir: Path, config: PipelineConfig) -> ConsoleApp:
            host = HostConfig(
                "gpu", SshTarget(endpoint.host, endpoint.user, endpoint.port), python=sys.executable,
                state_dir=str(state_dir), known_hosts=str(endpoint.known_hosts),
                identity=str(endpoint.identity), pipeline=config,
            )  # fmt: skip
            return ConsoleApp({"gpu": lambda: open_ssh_link(host)})

        yield over_ssh


@pytest.mark.slow
async def test_the_dashboard_shows_the_numbers_and_follows_appends(
    state_dir: Path, app_factory: MakeApp, sample_root: Path, sample_pipeline: PipelineConfig
) -> None:
    app = app_factory(state_dir, sample_pipeline)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(  # over SSH: the handshake, the bundle's upload and the agent's start, on
            pilot,  # a machine running six test workers on two cores, took over 30 s once
            lambda: (
                app.views["gpu"].snapshot is not None and isinstance(app.screen, DashboardScreen)
            ),
            timeout_s=90.0,
        )
        await wait_for(pilot, lambda: cell(app, "datasets", "B1_sharegpt", "responses") == "3 / 5")
        assert cell(app, "datasets", "B1_sharegpt", "tokens") == "60 / 1K"
        assert cell(app, "datasets", "B2_ultrachat", "status") == "pending"
        with (sample_root / "B2_ultrachat" / "raw_responses.jsonl").open("a") as handle:
            handle.write(response_line("p0", 1200))
        await wait_for(
            pilot, lambda: cell(app, "datasets", "B2_ultrachat", "tokens") == "1.2K / 1K"
        )
        assert cell(app, "datasets", "B2_ultrachat", "status") == "over budget"
        assert "over its budget" in str(app.screen.query_one("#alerts").render())
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("p")
        assert isinstance(app.screen, PipelineScreen)
        assert "next: generate (key g)" in str(app.screen.query_one("#pipeline-title").render())
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)
        table = app.screen.query_one("#datasets", DataTable)
        table.focus()
        await pilot.press("o", "o")  # sort by tokens: the biggest first
        await wait_for(pilot, lambda: str(table.get_row_at(0)[0]) == "B2_ultrachat")
        table.move_cursor(row=table.get_row_index("B1_sharegpt"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DatasetScreen))
        title = str(app.screen.query_one("#dataset-title").render())
        assert "B1_sharegpt" in title
        assert "last 3 responses" in title
        assert "stop 3" in title
        chart = str(app.screen.query_one("#dataset-tokens-over-time").render())
        assert ": 60 of 1,000 (6%)" in chart
        assert "budget 1,000" in chart
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


@pytest.mark.slow
async def test_a_lost_link_turns_stale_and_recovers_by_itself(
    state_dir: Path, app_factory: MakeApp, sample_pipeline: PipelineConfig
) -> None:
    app = app_factory(state_dir, sample_pipeline)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "link up" in header(app))
        kill_process(read_json(state_dir / "daemon.json")["pid"], signal.SIGKILL)
        await wait_for(
            pilot, lambda: "link down" in header(app) or "link connecting" in header(app)
        )
        assert app.screen.query_one("#datasets").has_class("-stale")
        await wait_for(
            pilot,
            lambda: (
                "link up" in header(app)
                and not app.screen.query_one("#datasets").has_class("-stale")
            ),
        )


async def test_stopping_a_job_asks_first_with_cancel_focused(
    tmp_path: Path, state_dir: Path
) -> None:
    config = PipelineConfig(
        jobs={"nap": JobSpec((sys.executable, "-c", "import time; time.sleep(120)"))}
    )
    launcher = await open_local_link(state_dir, config)
    job: JobInfo = await launcher.call(JOBS_LAUNCH, LaunchParams("nap"), idempotency_key="nap")
    await launcher.close()
    app = make_app(state_dir, config)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: cell(app, "jobs", job.id, "state") == "running")
        app.screen.query_one("#jobs").focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.focused is not None
        assert app.screen.focused.id == "cancel"
        snapshot = app.views["gpu"].snapshot
        assert snapshot is not None
        [running] = [j for j in snapshot.jobs if j.id == job.id]
        assert f"pid {running.pid}, process group {running.pgid}" in str(
            app.screen.query_one("#confirm-text").render()
        )
        await pilot.press("enter")  # Cancel: nothing happens
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        assert cell(app, "jobs", job.id, "state") == "running"
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.click("#confirm")
        await wait_for(pilot, lambda: cell(app, "jobs", job.id, "state") == "stopped")


@pytest.mark.slow
async def test_the_log_viewer_follows_pauses_searches_and_filters(
    tmp_path: Path, state_dir: Path
) -> None:
    log = tmp_path / "sglang.log"
    log.write_text(
        "".join(
            f"[2026-11-29 10:00:{i:02d} TP0] Decode batch, #running-req: {i}\n" for i in range(40)
        )
    )
    app = make_app(state_dir, PipelineConfig(sglang_url="http://127.0.0.1:1", sglang_log=str(log)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot,
            lambda: (
                app.views["gpu"].snapshot is not None
                and app.views["gpu"].snapshot.server is not None
            ),
        )
        await pilot.press("l")
        await wait_for(
            pilot, lambda: isinstance(app.screen, LogScreen) and len(app.screen.lines) == 40
        )
        screen = app.screen
        assert isinstance(screen, LogScreen)
        assert screen.log_name == "sglang"
        await pilot.press("space")  # pause
        with log.open("a") as handle:
            handle.write("ERROR something broke\nafter the error\n")
        await wait_for(
            pilot, lambda: "+2 new lines" in str(screen.query_one("#log-status").render())
        )
        assert screen.unseen == 2
        await pilot.press("space")  # follow again: caught up
        assert screen.unseen == 0
        await pilot.press("f")
        await pilot.press(*"ERROR", "enter")
        assert screen.shown_lines() == [
            "[2026-11-29 10:00:38 TP0] Decode batch, #running-req: 38",
            "[2026-11-29 10:00:39 TP0] Decode batch, #running-req: 39",
            "ERROR something broke",
            "after the error",
        ]
        await pilot.press("slash", *"req: 3", "enter")
        assert screen.search is not None
        assert screen.match_index == 0
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


async def test_an_unreachable_host_never_blocks_the_others(
    state_dir: Path, sample_pipeline: PipelineConfig
) -> None:
    async def bad() -> AgentLink:
        raise LinkError("box2: cannot reach root@10.9.9.9: No route to host")

    app = ConsoleApp({"box2": bad, "gpu": local_opener(state_dir, sample_pipeline)})
    async with app.run_test(size=SIZE) as pilot:
        assert app.current == "box2"
        await wait_for(
            pilot,
            lambda: (
                app.views["box2"].state.status == "down" and app.views["gpu"].snapshot is not None
            ),
        )
        assert "link down" in header(app)
        await pilot.press("h")
        await wait_for(pilot, lambda: cell(app, "datasets", "B1_sharegpt", "responses") == "3 / 5")
        assert "box2: link down (unreachable 10.9.9.9)" in header(app)


async def test_ctrl_c_quits_as_q_does_even_while_the_host_is_still_unreachable() -> None:
    """Textual's own Ctrl+C only names the quit key in a toast (with its markup shown raw here);
    users of k9s and lazydocker press it to quit, at any moment."""

    async def unreachable() -> AgentLink:
        raise LinkError("no route to host")

    app = ConsoleApp({"gpu": unreachable})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0
        assert not any("[b]" in m for m in toasts(app)), "no raw markup"


async def test_quitting_while_a_link_is_still_opening_ends_its_attach(tmp_path: Path) -> None:
    """Textual cancels workers on its way out without waiting for them: the link worker stopped
    mid-hello must still kill and reap the attach it started before the console is gone."""
    started = tmp_path / "attach.pid"
    silent = tmp_path / "python"  # an attach that never says hello
    silent.write_text(f"#!/bin/sh\necho $$ > {started}\nexec sleep 120\n")
    silent.chmod(0o755)
    app = ConsoleApp({"gpu": lambda: open_local_link(tmp_path / "state", None, str(silent))})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: started.exists() and started.read_text().endswith("\n"))
        assert app.connections["gpu"].state.status == "connecting"
    pid = int(started.read_text())
    assert not Path(f"/proc/{pid}").exists(), "the attach outlived the console (or was not reaped)"
