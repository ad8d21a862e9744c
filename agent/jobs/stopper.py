"""Stopping a job's process group safely: its stop signal, the grace, SIGTERM, then SIGKILL.

Before every signal the group is checked to still be the job's: the shim or the job itself must
still have the start time recorded at launch. If neither does, the pid may belong to someone
else now, and nothing is signalled: the job is reported lost. After the last step the group is
checked to be empty, so "stopped" means nothing of it is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from agent.host.procfs import carrying, descendants, group_members, is_same_process
from agent.host.signals import kill_group, kill_process
from agent.jobs.registry import MARK_ENV
from agent.protocol import StopOutcome, StopStep

POLL_S = 0.05
KILL_WAIT_S = 5.0
_now = time.monotonic  # the stop plan's clock; tests replace it


@dataclass(frozen=True, slots=True)
class GroupIdentity:
    """What names a job's process group: the group id and the processes that prove it is ours."""

    pgid: int | None
    """None where no record proves a group (a job half launched): its known processes only."""
    known: tuple[tuple[int, int], ...]
    """(pid, start ticks) of the shim and the job, whichever were recorded."""
    seen_escaped: set[tuple[int, int]] = field(default_factory=set)
    """(pid, start ticks) of descendants found outside the group during this stop."""
    mark: str | None = None
    """The job's mark (MARK_ENV in its processes' environment), where its job.json has one."""

    def still_ours(self) -> bool:
        """True while a recorded process, or a remembered escapee, lives with its start time."""
        return any(is_same_process(pid, ticks) for pid, ticks in (*self.known, *self.seen_escaped))

    def members(self) -> list[int]:
        """Pids alive in the group, and the job's processes that left it."""
        if self.pgid is None:
            known = [pid for pid, ticks in self.known if is_same_process(pid, ticks)]
            return known + [pid for pid in self.escaped() if pid not in known]
        return [info.pid for info in group_members(self.pgid)] + self.escaped()

    def escaped(self) -> list[int]:
        """The job's processes in another group (a worker that called setsid, say).

        The shim leads the group and is a child subreaper, so everything the job started stays
        below it while it lives. Once it is gone (the job killed it, say), whatever carries the
        job's mark is the job's, wherever it went: only then is every process's environment read.
        Both are remembered with their start times, so they are still stopped when the shim and
        the job go first.
        """
        shim = next(((pid, ticks) for pid, ticks in self.known if pid == self.pgid), None)
        if shim is not None and is_same_process(*shim):  # a recorded shim leads the group
            shim_pid = shim[0]
            self.seen_escaped.update(
                (info.pid, info.start_ticks)
                for info in descendants(shim_pid)
                if info.pgid != shim_pid
            )
        elif self.mark is not None:
            known = {pid for pid, _ in self.known}
            self.seen_escaped.update(
                (info.pid, info.start_ticks)
                for info in carrying(MARK_ENV, self.mark)
                if info.pgid != self.pgid and info.pid not in known
            )
        return [pid for pid, ticks in sorted(self.seen_escaped) if is_same_process(pid, ticks)]

    def send(self, signum: signal.Signals) -> None:
        """Signal the whole group, and each escaped process by pid."""
        if self.pgid is None:  # no group proven: the recorded and marked processes, each by pid
            singles = self.members()
        else:
            singles = self.escaped()
            with contextlib.suppress(ProcessLookupError):
                kill_group(self.pgid, signum)
        for pid in singles:
            with contextlib.suppress(ProcessLookupError):
                kill_process(pid, signum)


@dataclass(frozen=True, slots=True)
class TreeIdentity:
    """A process the agent did not start and that leads no group: it and its descendants."""

    pid: int
    start_ticks: int

    def still_ours(self) -> bool:
        """True while the pid is still the process that was found."""
        return is_same_process(self.pid, self.start_ticks)

    def members(self) -> list[int]:
        """The process and everything below it."""
        root = [self.pid] if self.still_ours() else []
        return root + [info.pid for info in descendants(self.pid)] if root else []

    def send(self, signum: signal.Signals) -> None:
        """Signal the process and its descendants, each by pid."""
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError):
                kill_process(pid, signum)


class StopTarget(Protocol):
    """What a stop acts on."""

    def still_ours(self) -> bool: ...  # noqa: D102

    def members(self) -> list[int]: ...  # noqa: D102

    def send(self, signum: signal.Signals) -> None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class StopPlan:
    """The signals and waits of one stop."""

    stop_signal: signal.Signals
    grace_s: float
    term_grace_s: float

    def steps(self) -> list[tuple[signal.Signals, float]]:
        """(signal, seconds to wait after it) in order."""
        steps = [(self.stop_signal, self.grace_s)]
        if self.stop_signal != signal.SIGTERM:
            steps.append((signal.SIGTERM, self.term_grace_s))
        if self.stop_signal != signal.SIGKILL:
            steps.append((signal.SIGKILL, KILL_WAIT_S))
        return steps


async def stop_group(
    identity: StopTarget, plan: StopPlan, report: Callable[[StopStep], Awaitable[None]]
) -> tuple[StopOutcome, list[StopStep]]:
    """Run the plan; returns (outcome, steps).

    Every look at /proc (a walk of every process, twice) runs in a worker thread: eight stops
    polling on the event loop kept it busy enough that pings went unanswered.
    """
    steps: list[StopStep] = []
    for signum, wait_s in plan.steps():
        members = await asyncio.to_thread(_signal_if_ours, identity, signum)
        if members is None:
            return "lost", steps
        if not members:
            break
        step = StopStep(signum.name, time.time(), tuple(members))
        steps.append(step)
        await report(step)
        await _wait_empty(identity, wait_s)
    if await asyncio.to_thread(identity.members):
        return "lost", steps
    return ("stopped" if steps else "already_exited"), steps


def _signal_if_ours(identity: StopTarget, signum: signal.Signals) -> list[int] | None:
    """The members signalled ([] when none is left), or None when the group is no longer ours."""
    members = identity.members()
    if not members:
        return []
    if not identity.still_ours():  # or it died between the two looks: then nothing is left
        return [] if not identity.members() else None
    identity.send(signum)
    return members


async def _wait_empty(identity: StopTarget, timeout_s: float) -> None:
    """Poll /proc (these are not our children) until the group is empty or the deadline passes.

    A deadline, not a count of polls: each poll walks /proc, which takes longer on a loaded
    machine, and counting polls stretched a 2 s grace by more than a second.
    """
    deadline = _now() + timeout_s
    while await asyncio.to_thread(identity.members):
        left = deadline - _now()
        if left <= 0:
            return
        await asyncio.sleep(min(POLL_S, left))


def parse_signal(name: str) -> signal.Signals:
    """A signal by name (SIGINT or INT), or ValueError."""
    upper = name.upper()
    try:
        return signal.Signals[upper if upper.startswith("SIG") else f"SIG{upper}"]
    except KeyError:
        raise ValueError(f"unknown signal {name!r}") from None
