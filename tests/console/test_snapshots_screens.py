"""The detail, deploy, redeploy, pipeline, events and trust screens, in both themes, at 100x30;
the dashboard at 80x24, 120x40 and 200x60 in the light theme (test_layout.py has the dark).

Each test's docstring says what a correct picture shows. As in test_snapshots.py, the app gets a
fixed snapshot and clock, and each screen fixed content, so the pictures change only when the
screens do. Regenerate with `--snapshot-update` and look at every diff.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import asyncssh
import pytest
from textual.pilot import Pilot
from textual.screen import Screen

from agent.protocol import (
    AutopilotStage,
    AutopilotStatus,
    DatasetDetail,
    ErrorSummary,
    EventsList,
    JobInfo,
    JobSpec,
    OperationInfo,
    OperationStep,
    ResponseSummary,
    TimelineEvent,
    TokensAt,
)
from console.link.agent_link import AgentLink
from console.link.deploy import FilePlan
from console.link.host_keys import OfferedKey
from console.model.redeploy_view import RedeployFacts
from console.ui.messages import SnapshotReceived
from console.ui.screens.dataset import DatasetScreen
from console.ui.screens.deploy import DeployScreen
from console.ui.screens.events import EventsScreen
from console.ui.screens.pipeline import PipelineScreen
from console.ui.screens.redeploy import RedeployScreen
from console.ui.screens.trust import TrustScreen
from tests.support.fixed_app import SIZES, fixed_app, show_crowded, show_fixed
from tests.support.sample_snapshot import CROWDED, NOW, SNAPSHOT

SIZE = (100, 30)
THEMES = ["textual-dark", "textual-light"]
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkK+zcZHB/41xXPqu7kn2X+dF8shjiGpLfmNlhPCTRw"

DETAIL = DatasetDetail(
    "B3_math", 200,
    (ResponseSummary("math-0412", 512, "stop", 3.1), ResponseSummary("math-0413", 2048, "length", 9.8),
     ResponseSummary("math-0414", 301, "stop", 1.9)),
    {"stop": 180, "length": 20}, (0, 256, 512, 1024, 2048), (40, 90, 50, 20),
    (ErrorSummary("math-0007", "HTTP 400: prompt longer than the context", True),
     ErrorSummary("math-0101", "timed out after 600 s", False)),
    tokens_over_time=tuple(TokensAt(NOW - 3_600 + 360 * i, 420_000 * i) for i in range(11)),
    budget=5_000_000,
)  # fmt: skip
PLANS = [
    FilePlan(Path("/home/me/eagle3/run_inference.py"), "/data/eagle3/run_inference.py", "a1", "b2"),
    FilePlan(Path("/home/me/eagle3/prompts.py"), "/data/eagle3/prompts.py", "c3", "c3"),
    FilePlan(Path("/home/me/eagle3/train.yaml"), "/data/eagle3/train.yaml", "d4", None),
    FilePlan(None, "/data/eagle3/vocab.py", None, "e5"),
]
TIMELINE = EventsList((
    TimelineEvent(NOW - 7_200, "agent_started", "agent", "info", "agent 0.1.0 started"),
    TimelineEvent(NOW - 4_000, "job_started", "inference-B3_math-1", "info", "started pid 4242",
                  asked_by="console@laptop"),
    TimelineEvent(NOW - 1_800, "budget_reached", "B1_sharegpt", "info", "10,000,000 tokens"),
    TimelineEvent(NOW - 600, "alert_raised", "B2_ultrachat", "error", "700,000 over its budget"),
    TimelineEvent(NOW - 60, "server_down", "sglang-1", "warning", "health check refused"),
))  # fmt: skip


class TimelineLink:
    """Stands in for the link: answers the events request with TIMELINE."""

    async def call(self, *_: object, **__: object) -> EventsList:
        """The fixed timeline, whatever was asked."""
        return TIMELINE


def over_dashboard(screen: Screen[Any]) -> Any:
    """A run_before that shows the fixed dashboard and pushes `screen` over it."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await show_fixed(pilot)
        await pilot.app.push_screen(screen)
        await pilot.pause(0.3)

    return run_before


def redeploy_screen() -> RedeployScreen:
    spec = JobSpec(("python",), stop_signal="SIGINT", grace_s=60)
    job = next(job for job in SNAPSHOT.jobs if job.id == "inference-B3_math-1")
    files = ("changed: /data/eagle3/run_inference.py",)
    return RedeployScreen(RedeployFacts("gpu", job, spec, files, SNAPSHOT))


def trust_screen() -> TrustScreen:
    offered = OfferedKey(asyncssh.import_public_key(HOST_KEY), ())
    detail = (
        f"gpu: unknown host key for gpu-node-3:22: {offered.algorithm} {offered.fingerprint} is "
        "not in ~/.ssh/known_hosts. If this is the right key, pin it with `eagle-console trust gpu`."
    )
    return TrustScreen("gpu", detail, offered)


@pytest.mark.parametrize("theme", THEMES)
def test_dataset_detail(snap_compare: Any, theme: str) -> None:
    """B3_math: 200 recent responses, finish reasons stop 180 / length 20, a length histogram of
    four bars, the tokens-over-time curve rising towards the 5M budget line, three latest
    responses and two errors (one permanent)."""
    run_before = over_dashboard(DatasetScreen("gpu", DETAIL))
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_deploy(snap_compare: Any, theme: str) -> None:
    """The drift table: run_inference.py changed, prompts.py unchanged, train.yaml new, vocab.py
    missing locally; the footer lists enter, D, b and escape."""
    run_before = over_dashboard(DeployScreen("gpu", PLANS, "agent bundle: up to date"))
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_redeploy(snap_compare: Any, theme: str) -> None:
    """The redeploy modal over the dashboard: the job's state, pid and signals, B3_math's
    responses and tokens, its projection (5,000,000: within its budget) and the --token-budget
    suggestion, the file to deploy, the editable command ending in --token-budget 5000000,
    Cancel focused."""
    run_before = over_dashboard(redeploy_screen())
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_pipeline(snap_compare: Any, theme: str) -> None:
    """The pipeline's stages for the crowded host (eight datasets, a training run) with their
    states, and the next step."""
    run_before = over_dashboard(PipelineScreen("gpu", CROWDED))
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_events(snap_compare: Any, theme: str) -> None:
    """Five events of the last day, oldest first, the cursor on the newest (server down); the
    job start says who asked for it."""
    link = cast(AgentLink, TimelineLink())
    run_before = over_dashboard(EventsScreen("gpu", link))
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", THEMES)
def test_trust(snap_compare: Any, theme: str) -> None:
    """The unknown-host-key modal: the ssh-ed25519 fingerprint, where to compare it, and the
    prompt to type yes, focused."""
    run_before = over_dashboard(trust_screen())
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_light_at_size(snap_compare: Any, size: tuple[int, int]) -> None:
    """As test_layout's test_dashboard_at_size, in the light theme: eight datasets with name,
    tokens, ETA and status at every size, and a footer that keeps ? Help and q Quit."""
    app = fixed_app("textual-light")
    assert snap_compare(app, terminal_size=size, run_before=show_crowded)


AUTOPILOT = AutopilotStatus(
    "running",
    (
        AutopilotStage("generate", "done", "8 dataset(s) at their budget or out of prompts"),
        AutopilotStage("export", "done", "export exited 0", 1),
        AutopilotStage("vocab", "done", "vocab exited 0", 1),
        AutopilotStage("free gpus", "done", "no server of the agent's holds the GPUs"),
        AutopilotStage("hidden states", "skipped", "no job of kind hidden_states is configured"),
        AutopilotStage("train", "running", "", 2),
    ),
    "train", "train running (restart 1)", 3, NOW - 7200,
)  # fmt: skip
REDEPLOYING = OperationInfo(
    "redeploy-1", "redeploy", "inference (B3_math)", "running",
    (OperationStep("stop", "done", "SIGINT", NOW), OperationStep("watch", "running",
     "waiting for the new run to run the new code", NOW)), NOW - 30, job_id="inference-1",
)  # fmt: skip
CRASHED = JobInfo("train-2", "train", "train", "failed", ("python", "-m", "train"), exit_code=1,
                  started_at=NOW - 900, ended_at=NOW - 60, restarts=1,
                  restart_note="restarting at 13:47:00 (restart 2 of 5 within 1 h)")  # fmt: skip
AUTOPILOTED = dataclasses.replace(
    SNAPSHOT, autopilot=AUTOPILOT, operations=(REDEPLOYING,), jobs=(*SNAPSHOT.jobs, CRASHED)
)


async def show_autopilot(pilot: Pilot[Any]) -> None:
    await show_fixed(pilot)
    pilot.app.post_message(SnapshotReceived("gpu", AUTOPILOTED))
    await pilot.pause()
    pilot.app.clear_notifications()
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
def test_dashboard_with_the_autopilot_on(snap_compare: Any, theme: str) -> None:
    """The datasets panel's subtitle says the autopilot runs, at train (train running, restart
    1), next serve, 3 restarts; the jobs panel's subtitle shows the redeploy of inference
    (B3_math) at its watch step; the crashed train job reads `failed · restarting` in red."""
    assert snap_compare(fixed_app(theme), terminal_size=(120, 40), run_before=show_autopilot)


@pytest.mark.parametrize("theme", THEMES)
def test_pipeline_with_the_autopilot_on(snap_compare: Any, theme: str) -> None:
    """Below the stages, the autopilot's line and its table: generate to free gpus done, hidden
    states skipped, train running with 2 tries, serve and evaluate pending."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await show_autopilot(pilot)
        await pilot.app.push_screen(PipelineScreen("gpu", AUTOPILOTED))
        await pilot.pause(0.3)

    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)
