"""The console ages its data on the monotonic clock and reads agent stamps on the agent's clock."""

from __future__ import annotations

from agent.protocol import Snapshot
from console.link.host_connection import LinkState
from console.model.host_view import HostView


def test_data_age_ignores_the_workstations_wall_clock_and_agent_now_follows_the_agent() -> None:
    ticks = [100.0]
    view = HostView("gpu", LinkState("gpu", "up"), monotonic=lambda: ticks[0])
    assert (view.age_s(), view.agent_now()) == (None, None)
    view.record_snapshot(
        Snapshot(taken_at=1_900_000_000.0, host_name="gpu", datasets_root=None, datasets=())
    )
    ticks[0] += 3.5  # whatever time.time() does meanwhile
    assert view.age_s() == 3.5
    assert view.agent_now() == 1_900_000_003.5
