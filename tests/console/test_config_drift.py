"""A dashboard whose config differs from the box's says so, and changes nothing on the box.

With the dashboard open, another console's `status` with another datasets root emptied it. Now
the dashboard that connects with another config is the one told: in its header while the link
is up, and in one toast naming the differences and the command that applies them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.protocol import DatasetsConfig, Event, PipelineConfig, Snapshot
from agent.state import StatePaths, read_json
from console.link.host_connection import HostConnection, LinkState
from console.link.local_link import open_local_link
from console.model.config_drift import drift_text
from console.model.link_text import link_text
from console.ui.app import ConsoleApp
from console.ui.messages import LinkChanged
from tests.support.datasets import write_prompts
from tests.support.fixed_app import SIZE, never
from tests.support.local_app import local_opener
from tests.support.sample_snapshot import NOW
from tests.support.screen import header, wait_for
from tests.support.waits import until

CHANGE = "datasets.root: /data/a → /data/b"


def test_the_link_says_config_differs_and_the_toast_says_how_to_apply() -> None:
    up = LinkState("kimi", "up", config_differences=(CHANGE,))
    assert link_text(up, None, NOW) == "up · config differs"
    assert link_text(LinkState("kimi", "up"), None, NOW) == "up"
    text = drift_text("kimi", (CHANGE, "jobs added: vocab"))
    assert text.startswith(f"config differs from what kimi runs: {CHANGE}; jobs added: vocab;")
    assert "`eagle-console apply kimi`" in text


async def test_a_dashboard_with_another_config_is_told_and_the_box_keeps_its_own(
    tmp_path: Path, state_dir: Path
) -> None:
    for name in ("a", "b"):
        write_prompts(tmp_path / name / "B1_chat", 3)
    first = await open_local_link(state_dir, PipelineConfig(DatasetsConfig(str(tmp_path / "a"))))
    await first.close()
    snapshots: list[Snapshot] = []

    def heard(host: str, event: Event) -> None:
        if isinstance(event.data, Snapshot):
            snapshots.append(event.data)

    opener = local_opener(state_dir, PipelineConfig(DatasetsConfig(str(tmp_path / "b"))))
    states: list[LinkState] = []
    connection = HostConnection("gpu", opener, states.append, heard)
    runner = asyncio.create_task(connection.run())
    try:
        await until(
            lambda: snapshots and any(s.latency_ms for s in states), "up, snapshot and ping"
        )
    finally:
        runner.cancel()
        await connection.close()
    change = f"datasets.root: {tmp_path / 'a'} → {tmp_path / 'b'}"
    assert [s.config_differences for s in states if s.status == "up"][-1] == (change,)
    assert snapshots[-1].datasets_root == str(tmp_path / "a")
    saved = read_json(StatePaths(state_dir).pipeline_config)
    assert saved["datasets"]["root"] == str(tmp_path / "a")


async def test_the_header_and_one_toast_name_the_difference() -> None:
    app = ConsoleApp({"gpu": never}, clock=lambda: NOW, monotonic=lambda: NOW)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.post_message(LinkChanged(LinkState("gpu", "up", config_differences=(CHANGE,))))
        await wait_for(pilot, lambda: "link up · config differs" in header(app))
        ping = LinkState("gpu", "up", latency_ms=3.0, config_differences=(CHANGE,))
        app.post_message(LinkChanged(ping))
        await wait_for(pilot, lambda: "3.0 ms" in header(app))
        told = [str(n.message) for n in app._notifications if "config differs" in str(n.message)]
    assert told == [drift_text("gpu", (CHANGE,))]
