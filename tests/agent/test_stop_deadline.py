"""A stop's grace is a deadline on the plan's clock, however long each /proc walk takes."""

from __future__ import annotations

import signal

import pytest

from agent.jobs import stopper
from agent.jobs.stopper import StopPlan, stop_group
from agent.protocol import StopStep

WALK_S = 0.2
"""What one look at the group costs on the fake clock: a slow /proc walk on a loaded machine."""


class _StubbornGroup:
    """A group that ignores every signal until SIGKILL; each look at it advances the clock."""

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock
        self.sent: list[tuple[str, float]] = []
        self.killed = False

    def members(self) -> list[int]:
        self.clock[0] += WALK_S
        return [] if self.killed else [4242]

    def still_ours(self) -> bool:
        return True

    def send(self, signum: signal.Signals) -> None:
        self.sent.append((signum.name, self.clock[0]))
        self.killed = signum == signal.SIGKILL


async def _no_report(step: StopStep) -> None:
    del step


async def test_slow_walks_do_not_stretch_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(stopper, "_now", lambda: clock[0], raising=False)
    monkeypatch.setattr(stopper, "POLL_S", 0.001)
    group = _StubbornGroup(clock)
    plan = StopPlan(stop_signal=signal.SIGUSR1, grace_s=2.0, term_grace_s=1.0)

    outcome, steps = await stop_group(group, plan, _no_report)

    assert outcome == "stopped"
    assert [name for name, _ in group.sent] == ["SIGUSR1", "SIGTERM", "SIGKILL"]
    (_, usr1_at), (_, term_at), (_, kill_at) = group.sent
    # Each wait ends at its deadline, give or take one walk; counting polls made it 3x longer.
    assert term_at - usr1_at == pytest.approx(2.0, abs=2 * WALK_S)
    assert kill_at - term_at == pytest.approx(1.0, abs=2 * WALK_S)
