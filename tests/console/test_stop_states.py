"""A stop modal states the job's real state, and a stop the user asked for never reads as a failure.

Stop modals once told of an exited job "pid 12296 will get its stop signal", then toasted
"already_exited" as raw text; a runner that exited with code 3 on its SIGINT showed `failed` and
a failure toast before `stopped`.
"""

from __future__ import annotations

import dataclasses
import time

from textual.widgets import Button

from agent.protocol import Alert, Event, JobInfo, JobSpec, Snapshot
from console.model.consequences import stop_consequences
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.widgets.jobs_table import JobsTable
from tests.support.fixed_app import SIZE
from tests.support.sample_snapshot import JOBS, NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import scripted, stops
from tests.support.shown_app import up_with
from tests.support.toasts import toasts

RUNNER = JOBS[0]
ENDED = dataclasses.replace(RUNNER, state="failed", exit_code=3, ended_at=NOW - 120)


def with_runner(job: JobInfo, *alerts: Alert) -> Snapshot:
    return dataclasses.replace(SNAPSHOT, jobs=(job, *JOBS[1:]), alerts=alerts)


def test_an_ended_job_is_not_offered_a_stop_and_says_how_and_when_it_ended() -> None:
    said = stop_consequences("gpu", with_runner(ENDED), RUNNER.id)
    at = time.strftime("%H:%M", time.localtime(ENDED.ended_at))
    assert "nothing to stop" in said
    assert f"exited with code 3 at {at}" in said
    assert "will get" not in said


def test_a_live_job_s_stop_names_its_signals_and_graces() -> None:
    spec = JobSpec(("python",), stop_signal="SIGINT", grace_s=60, term_grace_s=10)
    said = stop_consequences("gpu", SNAPSHOT, RUNNER.id, spec)
    assert "SIGINT, then SIGTERM after 60 s, then SIGKILL after 10 s" in said


async def test_k_on_an_ended_job_opens_no_stop_modal_and_says_there_is_nothing_to_stop() -> None:
    agent = scripted("a")
    app = ConsoleApp({"a": agent.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, with_runner(ENDED), "a")
        app.screen.query_one("#jobs").focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: any("nothing to stop" in t for t in toasts(app)))
        assert not isinstance(app.screen, ConfirmScreen)
        assert stops(agent) == []


async def test_a_stop_the_user_asked_for_shows_stopping_then_stopped_and_no_failure() -> None:
    agent = scripted("a")
    app = ConsoleApp({"a": agent.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, with_runner(RUNNER), "a")
        table = app.screen.query_one(JobsTable)
        table.focus()
        await pilot.press("k")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        app.screen.query_one("#confirm", Button).press()
        await wait_for(pilot, lambda: bool(stops(agent)))
        await wait_for(pilot, lambda: "stopping" in str(table.get_row(RUNNER.id)[4]))
        failed = Alert("job_failed", "error", "job inference exited with code 3", RUNNER.id, NOW)
        agent.push(Event("snapshot", with_runner(ENDED, failed)))
        await wait_for(pilot, lambda: "stopped" in str(table.get_row(RUNNER.id)[4]))
        await pilot.pause(0.2)
        assert not [t for t in toasts(app) if "exited with code" in t]
