"""Numbers end when the work ends: no rate from a writer that exited or a server that is down.

Once, after every run had exited, finished datasets kept "600/s" and "ETA 0s" for minutes, a
down server's panel read "running 1.0 · queued 0.0" and "gen 80 tok/s" from its last log line,
and the training panel read "step 600/300 · epoch 2".
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Sparkline, Static

from agent.protocol import Alert, DatasetProgress, ServerStats, Snapshot, TrainingProgress
from console.link.host_connection import LinkState
from console.ui.app import ConsoleApp
from console.ui.messages import LinkChanged, SnapshotReceived
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import cell, wait_for
from tests.support.shown_app import shown_app

FINISHED = DatasetProgress(
    "B1_sharegpt", 100, 100, 60_000, 60_000, tokens_per_s=600.0, eta_s=0.0, status="complete",
    last_response_at=NOW - 120, writer_active=False,
)  # fmt: skip
WRITING = DatasetProgress(
    "B3_math", 100, 40, 20_000, 60_000, tokens_per_s=380.0, eta_s=105.0, status="running",
    last_response_at=NOW - 1, writer_active=True,
)  # fmt: skip
LAST_LOG_LINE = {"#running-req": "1.0", "#queue-req": "0.0", "gen throughput (token/s)": "80.0"}
DOWN = ServerStats(
    "http://127.0.0.1:30000", False, detail="unreachable: Connection refused",
    log_stats=LAST_LOG_LINE, down_since=NOW - 300,
)  # fmt: skip
SERVER_DOWN = Alert("server_down", "error", "SGLang at http://127.0.0.1:30000: unreachable", "s")


def hhmm(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def showing(snapshot: Snapshot) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """Shows the app its link is up and `snapshot`, rendered."""

    async def show(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await pilot.pause()
        app.post_message(LinkChanged(LinkState("gpu", "up", since=NOW)))
        app.post_message(SnapshotReceived("gpu", snapshot))
        await wait_for(pilot, lambda: app.views["gpu"].snapshot is snapshot)  # type: ignore[attr-defined]
        await wait_for(
            pilot, lambda: "pipeline" in str(app.screen.query("#datasets").first().border_subtitle)
        )

    return show


def server_text(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#server-text", Static).render())


async def test_a_finished_dataset_shows_no_rate_and_says_when_it_ended() -> None:
    async with shown_app(showing(dataclasses.replace(SNAPSHOT, datasets=(FINISHED, WRITING)))) as (
        app,
        pilot,
    ):
        assert cell(app, "datasets", "B1_sharegpt", "rate") == "—"
        assert cell(app, "datasets", "B1_sharegpt", "ETA") == f"done {hhmm(NOW - 120)}"
        assert cell(app, "datasets", "B3_math", "rate") == "380/s"  # its writer lives
        assert cell(app, "datasets", "B3_math", "ETA") == "1m 45s"


async def test_a_live_writer_whose_responses_stopped_coming_shows_no_rate() -> None:
    quiet = dataclasses.replace(WRITING, last_response_at=NOW - 90, status="over_budget")
    async with shown_app(
        showing(dataclasses.replace(SNAPSHOT, datasets=(quiet,), server=DOWN))
    ) as (app, pilot):
        assert cell(app, "datasets", "B3_math", "rate") == "—"
        assert cell(app, "datasets", "B3_math", "ETA") == "—"


async def test_a_down_server_shows_no_load_or_rate_but_since_when_it_is_down() -> None:
    snapshot = dataclasses.replace(
        SNAPSHOT, datasets=(FINISHED,), server=DOWN, alerts=(SERVER_DOWN,)
    )
    async with shown_app(showing(snapshot)) as (app, pilot):
        text = server_text(app)
        assert "down" in text
        assert f"down since {hhmm(NOW - 300)}" in text
        assert "running" not in text
        assert "queued" not in text
        assert "tok/s" not in text
        assert app.screen.query_one(Sparkline).data == []  # a floor: nothing is generated
        assert "unreachable" in str(app.screen.query_one("#alerts").render())  # it agrees


async def test_an_idle_server_shows_no_generation_rate_from_its_last_batch() -> None:
    idle = ServerStats("http://127.0.0.1:30000", True, running_requests=0, log_stats=LAST_LOG_LINE)
    async with shown_app(showing(dataclasses.replace(SNAPSHOT, server=idle))) as (app, pilot):
        text = server_text(app)
        assert "running 0 · queued 0" in text
        assert "gen" not in text


async def test_training_steps_and_totals_are_overall() -> None:
    training = TrainingProgress(
        "sglang-1", 600, 600, 2, 1.2, None, None, 2.1, None, None, 0.0, epochs=2
    )
    snapshot = dataclasses.replace(SNAPSHOT, training=(training,))
    async with shown_app(showing(snapshot)) as (app, pilot):
        text = str(app.screen.query_one("#gpus", Static).render())
        assert "step 600/600 · epoch 2/2" in text
