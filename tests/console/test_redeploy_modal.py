"""The `R` modal: its numbers follow the host while it is open, it advises the budget from the
first moment, and at 80x24 it shows its title, the pid line, the whole command and its buttons.

Pressed before the overrun, `R` said "0 responses" and suggested no --token-budget; left
open, it kept "31,545 tokens" while a toast said 51,169; at 80x24 its title and pid line were
scrolled off and the command field read "…--token-budget 5000".
"""

from __future__ import annotations

import dataclasses
import shlex

from textual.pilot import Pilot
from textual.widgets import TextArea

from agent.protocol import DatasetProgress, Event, HelloResult, JobInfo, Snapshot
from console.config import HostConfig, SshTarget
from console.model.budget_advice import with_token_budget
from console.ui.app import ConsoleApp
from console.ui.screens.pipeline import PipelineScreen
from console.ui.screens.redeploy import RedeployScreen
from tests.support.fixed_app import SIZE
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import eventually, wait_for
from tests.support.scripted_agent import ScriptedAgent
from tests.support.shown_app import up_with

BUDGET = 25_000
ARGV = (
    "/home/someone/projects/eagle-console/.venv/bin/python", "-m", "agent.pipeline.inference",
    "--server", "http://127.0.0.1:41234", "--dataset-dir", "/tmp/eagle-demo-k2x9w1/datasets/B3_math",
    "--tokenizer", "/tmp/eagle-demo-k2x9w1/tokenizer", "--max-new-tokens", "1200",
    "--concurrency", "12", "--max-samples", "1000",
)  # fmt: skip
OLD_RUN = JobInfo("inference-old-B3_math-1", "inference-old", "inference", "running", ARGV,
                  pid=82261, pgid=82260, dataset="B3_math", started_at=NOW - 30)  # fmt: skip
STARTING = DatasetProgress("B3_math", 1200, 0, 0, BUDGET, status="running",
                           stop_condition="max_samples", target_responses=1000, writer_active=True)  # fmt: skip
CROSSED = dataclasses.replace(
    STARTING, responses=141, tokens=26_512, tokens_per_s=1_700.0, projected_tokens=196_534,
    projected_overrun_tokens=171_534, status="over_budget", in_flight=12,
)  # fmt: skip
HOST = HostConfig("gpu", SshTarget("gpu-node-3"))


def host_with(b3: DatasetProgress) -> Snapshot:
    """The sample host, its B3_math as given and written by the old run alone."""
    datasets = tuple(b3 if d.name == "B3_math" else d for d in SNAPSHOT.datasets)
    return dataclasses.replace(SNAPSHOT, datasets=datasets, jobs=(OLD_RUN,))


def modal_text(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#confirm-text").render())


def visible_lines(app: ConsoleApp) -> list[str]:
    """The terminal's rows as the user sees them: the screen on top, composed."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def focused_id(app: ConsoleApp) -> str | None:
    focused = app.screen.focused
    return focused.id if focused is not None else None


def scripted_app() -> tuple[ConsoleApp, ScriptedAgent]:
    agent = ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), {}, file_content=b"")
    return ConsoleApp({"gpu": agent.open}, host_configs={"gpu": HOST}, clock=lambda: NOW), agent


async def press_r(pilot: Pilot[None], agent: ScriptedAgent, b3: DatasetProgress) -> None:
    """The host comes up with B3_math as given; R on its old run opens the modal."""
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    await up_with(pilot, agent, host_with(b3))
    app.screen.query_one("#jobs").focus()
    await pilot.press("R")
    await wait_for(pilot, lambda: isinstance(app.screen, RedeployScreen))


async def test_r_before_any_response_advises_the_budget_then_follows_the_host() -> None:
    app, agent = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await press_r(pilot, agent, STARTING)
        text = modal_text(app)
        assert "B3_math: 0 responses, 0 tokens of 25,000" in text  # true: nothing written yet
        assert "B3_math: 0 tokens so far of its budget of 25,000; no projection yet" in text
        assert "the command now ends with --token-budget 25000" in text
        command = app.screen.query_one(TextArea)
        assert command.text == shlex.join(with_token_budget(ARGV, BUDGET))

        agent.push(Event("snapshot", host_with(CROSSED)))  # the modal stays open meanwhile
        await wait_for(pilot, lambda: "141 responses" in modal_text(app))
        shown = app.views["gpu"].snapshot
        assert shown is not None
        b3 = next(d for d in shown.datasets if d.name == "B3_math")
        text = modal_text(app)
        assert f"B3_math: {b3.responses:,} responses, {b3.tokens:,} tokens of 25,000" in text
        assert "projected to end at 196,534 tokens, 171,534 past its budget of 25,000" in text
        assert "it is past its budget already" in text
        assert "0 responses" not in text
        assert command.text == shlex.join(with_token_budget(ARGV, BUDGET))


async def test_an_edited_command_stays_as_edited_when_the_numbers_move() -> None:
    app, agent = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await press_r(pilot, agent, STARTING)
        command = app.screen.query_one(TextArea)
        command.text = "python -m runner --token-budget 30000"
        command.focus()
        await pilot.press("end", "enter")  # a command is one line: enter adds none
        assert command.text == "python -m runner --token-budget 30000"
        agent.push(Event("snapshot", host_with(CROSSED)))
        await wait_for(pilot, lambda: "141 responses" in modal_text(app))
        assert command.text == "python -m runner --token-budget 30000"


async def test_at_80x24_the_title_pid_whole_command_and_buttons_are_in_view() -> None:
    app, agent = scripted_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await press_r(pilot, agent, CROSSED)
        app.clear_notifications()  # toasts sit over the corner; the test reads the modal

        def all_in_view() -> None:
            lines = visible_lines(app)
            shown = "\n".join(lines)
            assert len(lines) == 24
            assert "Kill, deploy and restart inference-old?" in shown
            assert "(pid 82261, process group 82260)" in shown
            assert "Cancel" in shown
            assert "Kill, deploy, restart" in shown
            area = app.screen.query_one(TextArea).content_region
            rows = [line[area.x : area.right].strip() for line in lines[area.y : area.bottom]]
            expected = shlex.join(with_token_budget(ARGV, BUDGET))
            assert " ".join(row for row in rows if row) == expected  # every word, the tail too
            assert focused_id(app) == "cancel"

        await eventually(pilot, all_in_view)
        await pilot.press("tab")
        assert focused_id(app) == "confirm"


async def test_the_buttons_stay_put_when_live_numbers_shorten_the_text() -> None:
    app, agent = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await press_r(pilot, agent, STARTING)
        await pilot.pause()
        confirm, text = app.screen.query_one("#confirm"), app.screen.query_one("#confirm-text")
        before, text_rows = confirm.region, text.size.height
        unbudgeted = dataclasses.replace(STARTING, budget=None)  # no budget: no advice lines
        agent.push(Event("snapshot", host_with(unbudgeted)))
        await wait_for(pilot, lambda: "no projection yet" not in modal_text(app))
        await pilot.pause()
        assert text.size.height < text_rows  # the text did shrink
        assert confirm.region == before


async def test_a_height_hold_due_after_the_modal_is_gone_does_nothing() -> None:
    """A snapshot schedules the hold for after the next refresh. Textual runs it after the
    refresh of whichever screen is on top then: when Escape came in between, the dashboard's,
    with the modal already taken down. The console died there under load (CI, the
    terminal_text scenario: the next key found no console)."""
    app, agent = scripted_app()
    async with app.run_test(size=SIZE) as pilot:
        await press_r(pilot, agent, STARTING)
        modal = app.screen
        assert isinstance(modal, RedeployScreen)
        await modal.dismiss(None)
        await wait_for(pilot, lambda: not modal.children)  # its widgets are gone
        modal._hold_heights()  # what the scheduled callback runs: it must not look for them
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PipelineScreen))
