"""On connect, the console sums up what happened on the host since it last saw it, once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.protocol import DatasetsConfig, PipelineConfig, TimelineEvent
from agent.state import StatePaths
from agent.watch.history import History
from console.link.last_seen import LastSeen
from console.model.away import away_summary
from console.ui.app import ConsoleApp
from tests.support.datasets import response_line, write_sample_root
from tests.support.local_app import SIZE, local_opener
from tests.support.screen import wait_for
from tests.support.toasts import toasts
from tests.support.waits import until

DEADLINE_S = 30.0
AWAY = "while you were away"


def console_for(state_dir: Path, pipeline: PipelineConfig, console_dir: Path) -> ConsoleApp:
    return ConsoleApp({"gpu": local_opener(state_dir, pipeline)}, state_dir=console_dir)


async def recorded_kinds(state_dir: Path) -> list[str]:
    history = History(StatePaths(state_dir).root)
    try:
        return [event.kind for event in await asyncio.to_thread(history.events, 0.0, 1000)]
    finally:
        history.close()


async def test_a_reconnect_sums_up_what_happened_and_the_first_connection_says_nothing(
    tmp_path: Path, state_dir: Path
) -> None:
    root, console_dir = tmp_path / "datasets", tmp_path / "console"
    write_sample_root(root)
    pipeline = PipelineConfig(datasets=DatasetsConfig(str(root), budget=1000))
    first = console_for(state_dir, pipeline, console_dir)
    async with first.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: LastSeen(console_dir).get("gpu") is not None)
        assert not [t for t in toasts(first) if AWAY in t]
    with (root / "B2_ultrachat" / "raw_responses.jsonl").open("a") as handle:
        handle.write(response_line("p0", 1200))

    async def recorded() -> bool:  # the agent watches alone
        return "budget_reached" in await recorded_kinds(state_dir)

    await until(recorded, "the agent recorded the budget reached", DEADLINE_S)
    second = console_for(state_dir, pipeline, console_dir)
    async with second.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any(AWAY in t for t in toasts(second)))
        [summary] = [t for t in toasts(second) if AWAY in t]
        assert "1 budget reached" in summary


def test_the_summary_counts_each_kind_after_the_last_visit_only() -> None:
    def event(ts: float, kind: str) -> TimelineEvent:
        return TimelineEvent(ts, kind, "B1", "warning", "m")

    events = [
        event(5.0, "budget_reached"),  # before the last visit
        event(11.0, "budget_reached"),
        event(12.0, "job_failed"),
        event(13.0, "job_exited"),
        event(14.0, "guard_stop"),
        event(15.0, "job_started"),
    ]
    assert away_summary(events, 10.0) == f"{AWAY}: 1 budget reached, 2 jobs exited, 1 guard stop"
    assert away_summary(events[-1:], 10.0) is None


def test_last_seen_survives_a_restart_and_a_damaged_file_means_never(tmp_path: Path) -> None:
    LastSeen(tmp_path).mark("gpu", 123.5)
    assert LastSeen(tmp_path).get("gpu") == 123.5
    assert LastSeen(tmp_path).get("other") is None
    (tmp_path / "last_seen.json").write_text("{not json")
    assert LastSeen(tmp_path).get("gpu") is None
