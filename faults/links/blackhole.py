"""The SSH path black-holed, then restored: the console must notice without any close (§6.8).

The loopback SSH server runs as its own process and is frozen with SIGSTOP: its socket stays
open and nothing comes back, no FIN, no RST, as when a route dies. The agent and its job run on
in their own sessions. The console's `HostConnection` (over `open_ssh_link`) must mark the link
down within the bound its code gives: the SSH keepalive ends a silent connection after
`KEEPALIVE_INTERVAL_S * (KEEPALIVE_COUNT_MAX + 1)` without data, plus 2 s. The agent's ping
never ends a link (a busy agent is not a dead transport): only the keepalive may. After
SIGCONT the link must come back (a reconnect is fine) and answer a ping, with the job's log
flowing again.

The full campaign uses the shipped values. The short one lowers the keepalive (module
constants, restored after) so that it detects within seconds. Every log byte received must be
the job's file's.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from agent.host.signals import kill_process
from agent.protocol import JOBS_LAUNCH, JOBS_STOP, JobInfo, LaunchParams, StopParams
from console.link import ssh_link
from console.link.host_connection import HostConnection
from faults.harness.agents import agent_cleanup
from faults.harness.link import (
    TICKER,
    LinkWatch,
    ServerProcess,
    Ticker,
    check_log,
    first_up,
    followed_ticker,
    host_config,
    is_up,
    loopback_server,
    report_session_error,
    request_when_up,
    running_session,
)
from faults.result import Scale, ScenarioResult
from tests.support.waits import wait_until

TITLE = "Link black-holed (SSH server SIGSTOPped), then restored"
QUICK_KEEPALIVE: dict[str, Any] = {"KEEPALIVE_INTERVAL_S": 1, "KEEPALIVE_COUNT_MAX": 2}
"""`console.link.ssh_link` constants for the short run, put back after it."""
SLACK_S = 2.0
RECOVER_WITHIN_S = 60.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Freeze the SSH server, time the console's notice, thaw it, time the recovery."""
    result = ScenarioResult("blackhole", TITLE, seed)
    rng = random.Random(seed)
    lowered = mock.patch.multiple(ssh_link, **QUICK_KEEPALIVE)
    state_dir = workdir / "state"
    with contextlib.nullcontext() if scale.full else lowered:
        async with loopback_server(workdir / "ssh") as server, agent_cleanup(state_dir):
            watch = LinkWatch()
            async with running_session(host_config(server, state_dir), watch) as session:
                drill = _Blackholes(result, session, watch, server)
                try:
                    await drill.play(rng, scale.pick(3, 2))
                finally:
                    result.notes.append("what ended each dead link: " + "; ".join(drill.ended_by))
            report_session_error(result, watch)
        result.notes.append(
            f"keepalive {ssh_link.KEEPALIVE_INTERVAL_S} s x {ssh_link.KEEPALIVE_COUNT_MAX}"
            f"{' (shipped)' if scale.full else ' (lowered for the short run)'}: bound "
            f"{detection_bound_s():g} s (+{SLACK_S:g} s slack); the ping never ends a link; "
            "link: HostConnection over open_ssh_link to python -m console.link.loopback_ssh, "
            "frozen with SIGSTOP"
        )
    return result


def detection_bound_s() -> float:
    """How long the console's code may take to notice a silent link, at the current settings."""
    return float(ssh_link.KEEPALIVE_INTERVAL_S * (ssh_link.KEEPALIVE_COUNT_MAX + 1))


@dataclass
class _Blackholes:
    """The trials of one run, and what they found."""

    result: ScenarioResult
    session: HostConnection
    watch: LinkWatch
    server: ServerProcess
    ended_by: list[str] = field(default_factory=list)

    async def play(self, rng: random.Random, trials: int) -> None:
        """Start the job, then black-hole the link `trials` times."""
        if not await first_up(self.session, self.result):
            return
        ticker = await self._start_ticker()
        for trial in range(1, trials + 1):
            if not await self._trial(f"trial {trial}", rng, ticker):
                return
        await self._finish(ticker)

    async def _start_ticker(self) -> Ticker:
        key = f"faults-blackhole-{secrets.token_hex(6)}"
        info: JobInfo = await request_when_up(
            self.session, JOBS_LAUNCH, LaunchParams(TICKER), key=key
        )
        return await followed_ticker(self.session, info.id)

    async def _trial(self, label: str, rng: random.Random, ticker: Ticker) -> bool:
        """One black hole; False when the link did not come back (the run stops there)."""
        if not await self._healthy(label):
            return False
        await asyncio.sleep(rng.uniform(0.2, 2.0))
        stopped = time.monotonic()
        kill_process(self.server.pid, signal.SIGSTOP)
        self.result.faults += 1
        try:
            noticed = await self._detect(label, stopped, detection_bound_s())
            await asyncio.sleep(rng.uniform(0.5, 2.0))  # the black hole outlives the notice
        finally:
            resumed = time.monotonic()
            kill_process(self.server.pid, signal.SIGCONT)
        recovered = noticed and await self._recover(label, stopped, resumed)
        if not ticker.alive():
            self.result.violate(f"{label}: the job's process {ticker.pid} died")
        if not recovered:
            self.result.notes.append(f"the run stopped after {label}: the link did not recover")
        return recovered

    async def _healthy(self, label: str) -> bool:
        """Up, a ping answered, log bytes flowing: a fair start for the next trial."""
        since = time.monotonic()
        if not await wait_until(lambda: self._flowing(since), RECOVER_WITHIN_S):
            self.result.violate(f"{label}: the link was not healthy before the black hole")
            return False
        return True

    def _flowing(self, since: float) -> bool:
        pinged = self.session.state.latency_ms is not None
        return is_up(self.session) and pinged and self.watch.chunk_after(since) is not None

    async def _detect(self, label: str, stopped: float, bound_s: float) -> bool:
        noticed = lambda: self.watch.left_up_after(stopped) is not None  # noqa: E731
        if not await wait_until(noticed, bound_s + SLACK_S + 10):
            waited = bound_s + SLACK_S + 10
            self.result.violate(f"{label}: the dead link was not noticed in {waited:g} s")
            return False
        detection = (self.watch.left_up_after(stopped) or stopped) - stopped
        self.result.detection_s.append(detection)
        self.ended_by.append(f"{label}: {self.watch.detail_after(stopped)}")
        if detection > bound_s + SLACK_S:
            self.result.violate(
                f"{label}: noticed after {detection:.1f} s, over the bound {bound_s:g} + {SLACK_S:g} s"
            )
        return True

    async def _recover(self, label: str, stopped: float, resumed: float) -> bool:
        if not await wait_until(lambda: self._back(stopped) is not None, RECOVER_WITHIN_S):
            self.result.violate(f"{label}: not back {RECOVER_WITHIN_S:g} s after SIGCONT")
            return False
        self.result.recovery_s.append((self._back(stopped) or resumed) - resumed)
        return True

    def _back(self, stopped: float) -> float | None:
        return self.watch.recovered_after(stopped, answered=True)

    async def _finish(self, ticker: Ticker) -> None:
        key = f"faults-blackhole-stop-{secrets.token_hex(6)}"
        await request_when_up(self.session, JOBS_STOP, StopParams(ticker.job_id), key=key)
        await check_log(self.result, self.watch, ticker)
