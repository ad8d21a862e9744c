"""A link that is down says why and when it is tried again; a host without data shows none.

The dashboard once said "link down" and nothing more, `r` gave no sign it did anything, and `h`
to a host that was down kept the previous host's dataset rows under the new host's header.
"""

from __future__ import annotations

import dataclasses

from textual.widgets import DataTable, Static

from console.link.agent_link import AgentLink, LinkError
from console.link.host_connection import LinkState
from console.ui.app import ConsoleApp
from console.ui.messages import LinkChanged, SnapshotReceived
from tests.support.fixed_app import SIZE, never
from tests.support.sample_snapshot import NOW, SNAPSHOT
from tests.support.screen import header, wait_for
from tests.support.toasts import toasts

REFUSED = "box2: cannot reach root@10.9.9.9:22: Connect call failed ('10.9.9.9', 22)"


async def refused() -> AgentLink:
    raise LinkError(REFUSED)


async def test_a_down_link_says_why_with_its_retry_and_r_says_it_reconnects() -> None:
    app = ConsoleApp({"box2": refused})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: "link down (refused)" in header(app))
        assert "retry" in header(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: "box2: reconnecting now" in toasts(app))


async def test_the_host_strip_names_why_another_host_is_down() -> None:
    app = ConsoleApp({"gpu": never, "box2": refused})
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "box2: link down (refused)" in header(app))


async def test_h_to_a_host_without_data_shows_none_of_the_previous_host_s_rows() -> None:
    app = ConsoleApp({"gpu": never, "box2": never}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.post_message(LinkChanged(LinkState("gpu", "up", since=NOW)))
        app.post_message(SnapshotReceived("gpu", SNAPSHOT))
        down = LinkState(
            "box2", "down", "box2: cannot reach box2: no answer in 10 s", retry_at=NOW + 8
        )
        app.post_message(LinkChanged(down))
        datasets = app.screen.query_one("#datasets", DataTable)
        await wait_for(pilot, lambda: datasets.row_count == len(SNAPSHOT.datasets))
        await pilot.press("h")
        await wait_for(pilot, lambda: header(app).startswith("box2"))
        await wait_for(pilot, lambda: datasets.row_count == 0)
        assert app.screen.query_one("#jobs", DataTable).row_count == 0
        why = "no data from box2 yet: link down (timed out) · retry in 8s"
        assert why in str(app.screen.query_one("#server-text", Static).render())
        assert why in str(app.screen.query_one("#gpus", Static).render())
        assert "sglang-1" not in str(app.screen.query_one("#gpus", Static).render())
        assert "B2_ultrachat" not in str(app.screen.query_one("#alerts", Static).render())


async def test_a_host_whose_link_came_back_keeps_its_reason_until_it_is_up() -> None:
    app = ConsoleApp({"box2": never}, clock=lambda: NOW)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        down = LinkState("box2", "down", "box2: authentication failed for x (denied)", retry_at=NOW)
        app.post_message(LinkChanged(down))
        app.post_message(LinkChanged(dataclasses.replace(down, status="connecting", detail="")))
        await wait_for(pilot, lambda: "link connecting (last: auth)" in header(app))


def test_a_mistyped_host_is_called_unknown_and_named() -> None:
    """A mistyped host said only "unreachable": the name it could not resolve, and that it could
    not, say what to fix."""
    from console.model.link_text import failure_reason

    typo = LinkState("kimi", "down", "kimi: cannot reach root@gpu-bx:22: Name or service not known")
    assert failure_reason(typo) == "unknown host gpu-bx"
    routed = LinkState("b", "down", "b: cannot reach 10.9.9.9: No route to host")
    assert failure_reason(routed) == "unreachable 10.9.9.9"
    refused_state = LinkState("b", "down", REFUSED)
    assert failure_reason(refused_state) == "refused"
