"""SIGTERM to the daemon closes what it owns in order: console sessions, its tasks, its socket."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agent.attach import stop_daemon
from agent.protocol import LOGS_SUBSCRIBE, LogSubscribeParams, PipelineConfig
from agent.state import StatePaths
from console.link.local_link import open_local_link

STEPS = (
    r"closing 1 console sessions",
    r"closing \d+ background tasks",
    r"closing the socket",
    r"agent stopped",
)


async def test_sigterm_closes_sessions_then_tasks_then_the_socket(
    tmp_path: Path, state_dir: Path
) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("a line\n")
    link = await open_local_link(state_dir, PipelineConfig(sglang_log=str(log)))
    await link.call(LOGS_SUBSCRIBE, LogSubscribeParams("sglang", 0))
    paths = StatePaths(state_dir)
    try:
        assert await asyncio.to_thread(stop_daemon, paths)
    finally:
        await link.close()
    text = paths.daemon_log.read_text()
    found = [re.search(step, text) for step in STEPS]
    assert all(found), f"missing shutdown steps in:\n{text}"
    starts = [match.start() for match in found if match is not None]
    assert starts == sorted(starts), f"shutdown out of order:\n{text}"
    assert "did not stop within" not in text
