"""What the screens look like, in both themes (pytest-textual-snapshot).

Each test's docstring says what a correct picture shows. The app gets a fixed snapshot and a
fixed clock, so the pictures only change when the screens do. Regenerate with
`.venv/bin/pytest tests/console/test_snapshots.py --snapshot-update` and look at every diff.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.protocol import (
    Event,
    JobSpec,
    LogChunk,
)
from console.model.consequences import stop_consequences
from console.ui.messages import AgentEventReceived
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.logs import LogScreen
from tests.support.fixed_app import SIZE, fixed_app, show_fixed
from tests.support.sample_snapshot import SNAPSHOT


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    time.tzset()


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
