"""The agent's operations reach the user as toasts: each finished step once, and how it ended.

An operation comes by two paths (its `operation` event at each step, and every snapshot) and
again after a reconnect; a step must be told once whatever path brought it, and an operation
over before this console looked at its host is history, not news.
"""

from __future__ import annotations

import dataclasses

import pytest

from agent.protocol import (
    Alert,
    AutopilotStatus,
    Event,
    HelloResult,
    JobInfo,
    JobSpec,
    OperationInfo,
    OperationStep,
    PipelineConfig,
)
from console.config import HostConfig, SshTarget
from console.model.operations_view import OperationsSeen
from console.ui.app import ConsoleApp
from tests.support.fixed_app import SIZE
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import wait_for
from tests.support.scripted_agent import ScriptedAgent
from tests.support.shown_app import up_with
from tests.support.toasts import toasts

STOPPED = OperationStep("stop", "done", "SIGINT → SIGTERM", NOW)
STARTING = OperationInfo("redeploy-1", "redeploy", "inference (B3_math)", "running",
                         (STOPPED, OperationStep("deploy", "running", "", NOW)), NOW)  # fmt: skip
DONE = dataclasses.replace(
    STARTING, state="done", ended_at=NOW + 5,
    steps=(STOPPED, OperationStep("deploy", "done", "swapped in: /r/x.py", NOW)),
    outcome="inference (B3_math) runs the new code: running",
)  # fmt: skip
OLD = OperationInfo("redeploy-0", "redeploy", "inference (B1)", "failed", (), NOW - 600,
                    NOW - 500, outcome="could not start")  # fmt: skip


async def test_each_step_is_told_once_whichever_way_it_came() -> None:
    agent = ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), {}, file_content=b"")
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, dataclasses.replace(SNAPSHOT, operations=(OLD,)))
        agent.push(Event("operation", STARTING))
        agent.push(Event("snapshot", dataclasses.replace(SNAPSHOT, operations=(OLD, STARTING))))
        agent.push(Event("operation", DONE))
        agent.push(Event("snapshot", dataclasses.replace(SNAPSHOT, operations=(OLD, DONE))))
        await wait_for(pilot, lambda: any("redeploy done" in t for t in toasts(app)))
        told = [t for t in toasts(app) if "redeploy" in t]
    assert told == [
        "gpu: redeploy stop done: inference (B3_math): SIGINT → SIGTERM",
        "gpu: redeploy deploy done: inference (B3_math): swapped in: /r/x.py",
        "gpu: redeploy done: inference (B3_math) runs the new code: running",
    ]


def test_an_operation_over_before_the_console_looked_is_not_news() -> None:
    seen = OperationsSeen()
    assert seen.heard("gpu", [OLD, STARTING]) == []
    said = [t.message for t in seen.heard("gpu", [OLD, DONE])]
    assert said == [
        "gpu: redeploy deploy done: inference (B3_math): swapped in: /r/x.py",
        "gpu: redeploy done: inference (B3_math) runs the new code: running",
    ]


def test_a_redeploy_that_left_its_run_stopped_is_an_error_naming_the_job() -> None:
    seen = OperationsSeen()
    seen.heard("gpu", [])
    failed = dataclasses.replace(OLD, id="redeploy-2", outcome="the run is STOPPED: start it")
    [toast] = seen.heard("gpu", [failed])
    assert toast.severity == "error"
    assert toast.message == "gpu: redeploy failed: inference (B1): the run is STOPPED: start it"


def test_a_generate_operation_ends_saying_its_runs_started_not_that_generation_is_done() -> None:
    """`G` toasted "generate done" as the runs had just started."""
    seen = OperationsSeen()
    started = OperationInfo("generate-1", "generate", "inference on 8 dataset(s)", "running",
                            (), NOW)  # fmt: skip
    assert seen.heard("demo", [started]) == []
    ended = dataclasses.replace(started, state="done", ended_at=NOW + 2, outcome="8 started")
    [toast] = seen.heard("demo", [ended])
    assert toast.message == "demo: generate runs started: inference on 8 dataset(s): 8 started"
    assert "generate done" not in toast.message


@pytest.mark.parametrize(
    ("autopilot", "said"),
    [(AutopilotStatus("running"), "the autopilot serves the drafter"),
     (None, "press B to serve the drafter")],
)  # fmt: skip
async def test_after_training_the_toast_names_who_serves_the_drafter_next(
    autopilot: AutopilotStatus | None, said: str
) -> None:
    """It said "press B to serve the drafter" while the autopilot was doing just that."""
    trained = JobInfo("train-1", "train", "train", "exited", (), exit_code=0, started_at=NOW - 60)
    ended = Alert("job_exited", "info", "job train ended (exited, code 0)", "train-1", NOW)
    config = HostConfig("gpu", SshTarget("local"), pipeline=PipelineConfig(
        jobs={"evaluate": JobSpec(("python",), kind="evaluate")}))  # fmt: skip
    agent = ScriptedAgent(HelloResult(1, "0.1.0", "", 1, "gpu", NOW), {}, file_content=b"")
    app = ConsoleApp({"gpu": agent.open}, clock=lambda: NOW, host_configs={"gpu": config})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await up_with(pilot, agent, SNAPSHOT)
        after = dataclasses.replace(SNAPSHOT, jobs=(trained,), alerts=(ended,), autopilot=autopilot)
        agent.push(Event("snapshot", after))
        await wait_for(pilot, lambda: any(said in t for t in toasts(app)))
        assert autopilot is None or not any("press B" in t for t in toasts(app))
