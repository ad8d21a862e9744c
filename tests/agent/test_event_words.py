"""An event says each thing once, with the severity the same thing has everywhere.

Events showed "(asked by eagle-console 0.1.0)" twice (in the message, and again from the field),
and a budget reached was a warning in the events while its alert in `status` was info.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

from agent.protocol import (
    Alert,
    DatasetProgress,
    JobInfo,
    JobState,
    Snapshot,
    StopParams,
    TimelineEvent,
)
from agent.tasks import TaskOwner
from agent.watch.history import History
from agent.watch.recorder import Recorder
from console.cli.events import event_line


def snapshot(tokens: int, *jobs: JobInfo) -> Snapshot:
    dataset = DatasetProgress("B3_math", 10, 5, tokens, 1000)
    return Snapshot(time.time(), "h", None, (dataset,), (), jobs)


def job(state: JobState) -> JobInfo:
    return JobInfo("j1", "inference", "inference", state, ("runner",), pid=10, dataset="B3_math")


async def recorded(tmp_path: Path, *snapshots: Snapshot, stop: bool = False) -> list[str]:
    history = History(tmp_path)
    recorder = Recorder(history, TaskOwner("test"))
    try:
        for number, taken in enumerate(snapshots):
            if stop and number == len(snapshots) - 1:
                recorder.audited("eagle-console 0.1.0", "jobs.stop", StopParams("j1"), "k", "ok")
            await recorder.heard(taken)
        assert await asyncio.to_thread(history.written, 10.0)
        events = history.timeline(0.0, 100).events
    finally:
        history.close()
    return [event_line(event) for event in events]


async def test_who_stopped_a_job_is_said_once(tmp_path: Path) -> None:
    lines = await recorded(
        tmp_path, snapshot(0), snapshot(0, job("running")), snapshot(0, job("stopped")), stop=True
    )
    [ended] = [line for line in lines if "job_stopped" in line]
    assert ended.count("eagle-console 0.1.0") == 1, ended
    assert "(asked by eagle-console 0.1.0)" in ended


def test_an_event_an_older_agent_recorded_names_who_asked_once() -> None:
    old = TimelineEvent(1.0, "deploy", "/x", "info", "deploy of /x by me", "me")
    new = TimelineEvent(1.0, "job_stopped", "j1", "info", "j1 ended (stopped)", "me")
    assert event_line(old).count("me") == 1
    assert event_line(new).endswith("j1 ended (stopped) (asked by me)")


async def test_a_budget_reached_is_info_as_its_alert_is(tmp_path: Path) -> None:
    lines = await recorded(tmp_path, snapshot(900), snapshot(1200))
    [reached] = [line for line in lines if "budget_reached" in line]
    assert "  info     budget_reached" in reached, reached


async def test_a_cleared_alert_says_what_ended_not_its_old_advice(tmp_path: Path) -> None:
    advice = "B3_math will end near 2M tokens: restart it with --token-budget 1000"
    raised = Alert("projected_overrun", "warning", advice, "B3_math")
    standing = replace(snapshot(100), alerts=(raised,))
    lines = await recorded(tmp_path, snapshot(100), standing, snapshot(100))
    [cleared] = [line for line in lines if "alert_cleared" in line]
    assert cleared.endswith("projected overrun on B3_math cleared"), cleared


async def test_a_server_stopped_on_request_stopping_answering_is_not_an_error(
    tmp_path: Path,
) -> None:
    """The autopilot freeing the GPUs logged "the SGLang server stopped answering" as an error;
    a server that dies by itself still is one."""
    from agent.protocol import ServerStats

    def serving(healthy: bool, state: JobState) -> Snapshot:
        server = JobInfo("s1", "sglang", "server", state, ("sim",), pid=11, started_at=1.0)
        stats = ServerStats("http://127.0.0.1:30000", healthy, "x")
        return replace(snapshot(0, server), server=stats)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    stopped = await recorded(
        tmp_path / "a", serving(True, "running"), serving(False, "stopping"),
    )  # fmt: skip
    [down] = [line for line in stopped if "server_down" in line]
    assert "  info     server_down" in down, down
    assert "job sglang was stopped on request" in down
    died = await recorded(tmp_path / "b", serving(True, "running"), serving(False, "running"))
    [down] = [line for line in died if "server_down" in line]
    assert "  error    server_down" in down, down
