"""What the screens look like, in both themes (pytest-textual-snapshot).

Each test's docstring says what a correct picture shows. The app gets a fixed snapshot and a
fixed clock, so the pictures only change when the screens do. Regenerate with
`.venv/bin/pytest tests/console/test_snapshots.py --snapshot-update` and look at every diff.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.protocol import (
    Alert,
    DatasetProgress,
    Event,
    GpuSample,
    JobInfo,
    JobSpec,
    LogChunk,
    ServerStats,
    Snapshot,
)
from console.link.agent_link import AgentLink
from console.link.host_connection import LinkState
from console.model.consequences import stop_consequences
from console.ui.app import ConsoleApp
from console.ui.messages import AgentEventReceived, LinkChanged, SnapshotReceived
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.logs import LogScreen

NOW = 1_795_960_000.0
SIZE = (150, 42)

DATASETS = (
    DatasetProgress("B1_sharegpt", 60_000, 21_500, 10_000_000, 10_000_000, tokens_per_s=2_510.0,
                    status="complete", stop_condition="budget", target_responses=60_000,
                    target_tokens=10_000_000, mean_tokens_per_response=465.1),
    DatasetProgress("B2_ultrachat", 80_000, 2_912, 10_700_000, 10_000_000, tokens_per_s=2_480.0,
                    eta_s=0.0, projected_tokens=10_700_000, projected_overrun_tokens=700_000,
                    projected_overrun_hours=0.08, status="over_budget", stop_condition="max_samples",
                    target_responses=5_000),
    DatasetProgress("B3_math", 40_000, 1_200, 4_200_000, 5_000_000, tokens_per_s=2_400.0,
                    eta_s=333.0, eta_low_s=300.0, eta_high_s=410.0, projected_tokens=5_000_000,
                    projected_overrun_tokens=0, status="running", stop_condition="budget",
                    target_responses=40_000, writer_active=True),
    DatasetProgress("B4_code", 30_000, 0, 0, 10_000_000, status="pending"),
)  # fmt: skip
JOBS = (
    JobInfo("inference-B3_math-1", "inference", "inference", "running", ("python", "-m", "runner"),
            pid=4242, pgid=4240, dataset="B3_math", started_at=NOW - 4_000, gpu=False),
    JobInfo("sglang-1", "sglang", "server", "running", ("python", "-m", "sglang.launch_server"),
            pid=1200, pgid=1200, started_at=NOW - 90_000, gpu=True),
    JobInfo("ext-77-1", "hand-runner", "external", "running", ("python", "run_inference.py"),
            pid=77, pgid=77, started_at=NOW - 600, external=True),
)  # fmt: skip
SNAPSHOT = Snapshot(
    taken_at=NOW, host_name="gpu-node-3", datasets_root="/data/eagle3", datasets=DATASETS,
    alerts=(
        Alert("over_budget", "error", "B2_ultrachat: 10,700,000 tokens, 700,000 over its budget of 10,000,000", "B2_ultrachat"),
        Alert("stalled", "warning", "B5_sharegpt4: no new response for 12 min while its run is alive", "B5"),
    ),
    jobs=JOBS,
    server=ServerStats("http://127.0.0.1:30000", True, model_path="moonshotai/Kimi-K2", running_requests=64,
                       queued_requests=12, token_usage=0.81, gen_throughput_tokens_per_s=7_400.0),
    gpus=(GpuSample(0, "H200", 97.0, 120_000.0, 141_000.0, 66.0, 640.0, (1200,), ("sglang-1",)),
          GpuSample(1, "H200", 95.0, 119_000.0, 141_000.0, 64.0, 633.0, (1201,), ("sglang-1",))),
)  # fmt: skip


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    time.tzset()


async def never() -> AgentLink:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def fixed_app(theme: str = "textual-dark") -> ConsoleApp:
    return ConsoleApp({"gpu": never}, clock=lambda: NOW, theme=theme, monotonic=lambda: NOW)


def at_rate(tokens_per_s: float) -> Snapshot:
    """The sample snapshot with the server generating `tokens_per_s`."""
    assert SNAPSHOT.server is not None
    server = dataclasses.replace(SNAPSHOT.server, gen_throughput_tokens_per_s=tokens_per_s)
    return dataclasses.replace(SNAPSHOT, server=server)


async def show_fixed(pilot: Pilot[Any]) -> None:
    """The app hears what a link would say: up, then five snapshots (the last one SNAPSHOT)."""
    app = pilot.app
    await pilot.pause()  # the link's first "connecting" state is in before the fixed one
    app.post_message(
        LinkChanged(LinkState("gpu", "up", latency_ms=0.4, agent_version="0.1.0", since=NOW))
    )
    for rate in (7_000.0, 7_200.0, 7_400.0, 7_300.0, 7_400.0):
        app.post_message(SnapshotReceived("gpu", at_rate(rate)))
        await pilot.pause()  # one at a time: a newer snapshot replaces one still queued
    app.clear_notifications()  # the alerts' toasts: the picture is of the screen under them
    await pilot.pause()


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_dashboard(snap_compare: Any, theme: str) -> None:
    """Header with host, link up 0.4 ms, agent 0.1.0, live data, 00:26:40 clock; four datasets
    (B2 over budget in red with +700K overrun, B3 running with ETA 5m 33s (5m 00s–6m 50s)); three
    jobs (one external); SGLang healthy with Kimi-K2 and a sparkline; two GPUs held by sglang-1;
    the over-budget error and the stall warning in the alert strip."""
    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=show_fixed)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_log_viewer(snap_compare: Any, theme: str) -> None:
    """The SGLang log: stats lines in cyan, the error line red, the retry line yellow, following,
    and the status line counting 6 lines."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await show_fixed(pilot)
        await pilot.app.push_screen(LogScreen("gpu", "sglang"))
        text = "".join([
            "[2026-11-29 10:00:00 TP0] Prefill batch, #new-seq: 3, #new-token: 2048, #cached-token: 0, token usage: 0.05\n",
            "[2026-11-29 10:00:01 TP0] Decode batch, #running-req: 64, #token: 91234, token usage: 0.81, gen throughput (token/s): 7400.00\n",
            "[2026-11-29 10:00:02 TP0] Decode batch, #running-req: 64, #token: 92034, token usage: 0.82, gen throughput (token/s): 7380.00\n",
            "runner: retrying after: HTTP 500: simulated internal server error\n",
            "ERROR: CUDA out of memory while allocating the KV cache\n",
            "[2026-11-29 10:00:03 TP0] Decode batch, #running-req: 63, #token: 90011, token usage: 0.80, gen throughput (token/s): 7391.00\n",
        ])  # fmt: skip
        chunk = LogChunk("sglang", 0, len(text), text, len(text), 1)
        pilot.app.post_message(AgentEventReceived("gpu", Event("log", chunk)))
        await pilot.pause(0.3)

    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_help(snap_compare: Any, theme: str) -> None:
    """Every key of the command table with what it does, over the dashboard."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await show_fixed(pilot)
        await pilot.press("question_mark")

    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_confirm_stop(snap_compare: Any, theme: str) -> None:
    """The stop modal for the B3 runner: running, pid 4242, group 4240, "SIGINT, then SIGTERM
    after 60 s, then SIGKILL after 10 s", the dataset's numbers and what is drained or lost,
    Cancel focused, Stop in red."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await show_fixed(pilot)
        spec = JobSpec(("python",), stop_signal="SIGINT", grace_s=60)
        consequences = stop_consequences("gpu", SNAPSHOT, "inference-B3_math-1", spec)
        await pilot.app.push_screen(ConfirmScreen("Stop inference?", consequences, "Stop"))

    assert snap_compare(fixed_app(theme), terminal_size=SIZE, run_before=run_before)
