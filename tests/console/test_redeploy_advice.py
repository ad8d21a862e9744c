"""Headless `redeploy` gives the advice the TUI's `R` gives, and `--token-budget` applies it.

A run heading past its budget was restarted headless with the same command and no word about
it, while `R` showed the projection and suggested `--token-budget`.
"""

from __future__ import annotations

import dataclasses
import io
import time

import pytest
from rich.console import Console

from agent.protocol import HelloResult, JobInfo, OperationInfo, RedeployParams
from console.cli.redeploy_command import redeploy_with_advice
from console.config import HostConfig, SshTarget
from console.link.agent_link import LinkError
from console.model.budget_advice import budget_advice, with_token_budget
from console.ui.app import ConsoleApp
from console.ui.screens.redeploy import RedeployScreen
from tests.support.fixed_app import SIZE
from tests.support.operations import closed_after
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent
from tests.support.shown_app import up_with

OVER = JobInfo("inference-B2-1", "inference", "inference", "running", ("python", "-m", "runner"),
               pid=5151, pgid=5150, dataset="B2_ultrachat", started_at=NOW - 100)  # fmt: skip
RESTARTED = dataclasses.replace(OVER, id="inference-B2-0", state="exited", started_at=NOW - 200)
HOST = HostConfig("gpu", SshTarget("gpu-node-3"))


def scripted_host() -> ScriptedAgent:
    """A host whose B2_ultrachat run heads 700,000 tokens past its 10,000,000 budget."""
    snapshot = dataclasses.replace(SNAPSHOT, jobs=(OVER, RESTARTED))
    started = OperationInfo(
        "redeploy-1", "redeploy", "inference (B2_ultrachat)", "running", (), NOW
    )
    results = {"snapshot": snapshot, "operations.redeploy": started}
    return ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), results, file_content=b"")


def launched_argv(agent: ScriptedAgent) -> tuple[str, ...] | None:
    """The argv the redeploy asked the agent to start the job with (None: its own)."""
    [asked] = [r.params for r in agent.requests if r.method == "operations.redeploy"]
    assert isinstance(asked, RedeployParams)
    assert asked.job_id == OVER.id
    return asked.argv


async def redeploy_printing(agent: ScriptedAgent, token_budget: int | None) -> str:
    out = io.StringIO()
    async with closed_after(await agent.open()) as link:
        await redeploy_with_advice(
            link, HOST, OVER.id, None, token_budget, Console(file=out, width=400)
        )
    return out.getvalue()


async def test_headless_redeploy_prints_the_projection_and_the_suggestion() -> None:
    agent = scripted_host()
    printed = await redeploy_printing(agent, None)
    advice = budget_advice(OVER, dataclasses.replace(SNAPSHOT, jobs=(OVER,)))
    assert advice is not None
    assert advice.projection() in printed
    assert "10,700,000 tokens, 700,000 past its budget of 10,000,000" in printed
    assert advice.suggestion() in printed
    assert f"redeploy gpu {OVER.id} --token-budget 10000000" in printed
    assert launched_argv(agent) is None  # as asked: its own command


async def test_headless_token_budget_applies_the_suggestion() -> None:
    agent = scripted_host()
    printed = await redeploy_printing(agent, 10_000_000)
    assert launched_argv(agent) == (*OVER.argv, "--token-budget", "10000000")
    assert "Restarting with its own command" not in printed


async def test_r_shows_the_same_projection_and_suggestion() -> None:
    agent = scripted_host()
    app = ConsoleApp({"gpu": agent.open}, host_configs={"gpu": HOST}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await up_with(pilot, agent, dataclasses.replace(SNAPSHOT, jobs=(OVER,)))
        app.screen.query_one("#jobs").focus()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, RedeployScreen))
        text = str(app.screen.query_one("#confirm-text").render())
        snapshot = app.views["gpu"].snapshot
        advice = budget_advice(OVER, snapshot)
        assert advice is not None
        assert advice.projection() in text
        assert advice.suggestion() in text


def test_a_token_budget_already_in_the_command_is_replaced() -> None:
    assert with_token_budget(("r", "--token-budget", "5"), 9) == ("r", "--token-budget", "9")
    assert with_token_budget(("r", "--token-budget=5"), 9) == ("r", "--token-budget=9")
    assert with_token_budget(("r",), 9) == ("r", "--token-budget", "9")


async def test_headless_redeploy_of_a_dataset_whose_run_ended_says_so_in_one_line() -> None:
    """After its run ended, `redeploy HOST B2_ultrachat` said "no job" and listed every job."""
    stopped = dataclasses.replace(OVER, id="inference-B2-1", state="stopped", exit_code=3,
                                  ended_at=NOW - 120)  # fmt: skip
    exited = dataclasses.replace(OVER, id="inference-B2-2", state="exited", exit_code=0,
                                 started_at=NOW - 100, ended_at=NOW - 60)  # fmt: skip
    other = dataclasses.replace(OVER, id="old-B2-0", name="inference-old", state="exited",
                                exit_code=0, started_at=NOW - 900, ended_at=NOW - 800)  # fmt: skip
    snapshot = dataclasses.replace(SNAPSHOT, jobs=(other, stopped, exited, *SNAPSHOT.jobs))
    agent = ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), {"snapshot": snapshot},
                          file_content=b"")  # fmt: skip
    async with closed_after(await agent.open()) as link:
        with pytest.raises(LinkError) as caught:
            await redeploy_with_advice(
                link, HOST, "B2_ultrachat", None, None, Console(file=io.StringIO())
            )
    said = str(caught.value)
    at = time.strftime("%H:%M", time.localtime(NOW - 60))
    assert "\n" not in said
    assert said.startswith(
        f"B2_ultrachat: its run inference-B2-2 exited with code 0 at {at}, its budget met "
        "(10,700,000 of 10,000,000 tokens); nothing runs there to redeploy."
    )
    assert "eagle-console start gpu inference/B2_ultrachat" in said
    assert "no job" not in said
    assert "sglang" not in said  # not a list of every job
    assert [r.method for r in agent.requests if r.method.startswith("operations")] == []
