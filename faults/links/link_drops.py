"""SSH connections reset and agent daemons restarted under a running job (fault plan §6.7).

The console's own self-healing link (`console.link.host_connection.HostConnection` over `open_ssh_link`) follows a
job's log through a loopback SSH server in its own process. Between them sits a TCP relay whose
`cut` resets both sockets at once, as a network drop does; the agent daemon is restarted with
`python -m agent stop` (the next attach starts a new one). The first launch is cut as soon as
the agent has created the job, so its answer is most likely lost, and retried with the same
idempotency key, as are launches after some later faults; the run ends by killing the job while
the link is down.

Checked: the job's process (pid and start time) survives every fault; the log bytes received
over the link, concatenated, are the job's log file exactly (chunk offsets contiguous, counter
unbroken); one job only, whatever the retries; the job's end is reported after the reattach;
each fault is noticed and the link comes back with new log bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent.host.signals import kill_process
from agent.protocol import JOBS_LAUNCH, LIVE_JOB_STATES, JobInfo, LaunchParams
from console.link.agent_link import LinkError
from console.link.host_connection import HostConnection
from faults.harness.agents import agent_cleanup
from faults.harness.link import (
    TICKER,
    LinkWatch,
    Ticker,
    check_log,
    first_up,
    followed_ticker,
    host_config,
    is_up,
    loopback_server,
    own_jobs,
    pin_known_hosts,
    report_session_error,
    request_when_up,
    running_session,
)
from faults.harness.relay import CuttableRelay
from faults.result import Scale, ScenarioResult
from tests.support.simulator_process import agent_env
from tests.support.waits import wait_until

TITLE = "SSH drops (TCP resets) and agent restarts during a running job"
DETECT_WITHIN_S = 20.0
RECOVER_WITHIN_S = 60.0
ENDED_WITHIN_S = 20.0


async def run(scale: Scale, workdir: Path, seed: int) -> ScenarioResult:
    """Launch the ticking job, then drop the link and restart the agent in a random order."""
    result = ScenarioResult("link_drops", TITLE, seed)
    rng = random.Random(seed)
    drops, restarts = scale.pick(20, 4), scale.pick(5, 1)
    schedule = ["drop"] * (drops - 2) + ["restart"] * restarts  # + the launch cut, the final cut
    rng.shuffle(schedule)
    state_dir = workdir / "state"
    async with loopback_server(workdir / "ssh") as server, agent_cleanup(state_dir):
        relay = CuttableRelay(server.port)
        await relay.start()
        try:
            known_hosts = pin_known_hosts(server, relay.port, workdir / "relay_known_hosts")
            host = host_config(server, state_dir, port=relay.port, known_hosts=known_hosts)
            watch = LinkWatch()
            async with running_session(host, watch) as session:
                drill = _Drill(result, session, watch, relay, state_dir)
                await drill.play(rng, schedule)
            report_session_error(result, watch)
        finally:
            await relay.close()
    result.notes.append(
        "link: console.link.host_connection.HostConnection over open_ssh_link, through a TCP relay whose cut resets "
        "both sockets (RST); restart: python -m agent stop, then the reconnect's attach starts a "
        "new daemon; detection and recovery are timed from the cut or the stop command's start"
    )
    return result


@dataclass
class _Drill:
    """One run: the link, the relay to cut, the job, and the counts."""

    result: ScenarioResult
    session: HostConnection
    watch: LinkWatch
    relay: CuttableRelay
    state_dir: Path
    key: str = field(default_factory=lambda: f"faults-link-drops-{secrets.token_hex(6)}")
    launches: int = 0
    injected: dict[str, int] = field(default_factory=lambda: {"drop": 0, "restart": 0})
    death_seen: bool = False

    async def play(self, rng: random.Random, schedule: list[str]) -> None:
        """Launch through a cut, run the schedule, end the job while the link is down, count."""
        if not await first_up(self.session, self.result):
            return
        ticker = await self._launch_through_a_cut()
        if not await wait_until(lambda: self.watch.received(ticker.log_name), 30):
            self.result.violate("no log bytes arrived after subscribing to the job's log")
        relaunch_after = set(rng.sample(range(len(schedule)), k=max(1, len(schedule) // 4)))
        for index, kind in enumerate(schedule):
            if not await self._fault(f"{kind} {index + 1}", kind, rng, ticker):
                self.result.notes.append(f"the run stopped after {kind} {index + 1}: no recovery")
                return
            if kind == "restart" or index in relaunch_after:
                await self._relaunch(f"{kind} {index + 1}", ticker)
        if await self._end_while_down(rng, ticker):
            await self._count(ticker)

    async def _launch_through_a_cut(self) -> Ticker:
        """Send the launch, cut the link once the job exists, retry with the same key."""
        link = self.session.link
        assert link is not None
        first = asyncio.create_task(
            link.call(JOBS_LAUNCH, LaunchParams(TICKER), idempotency_key=self.key)
        )
        self.launches += 1
        created = lambda: any(self.state_dir.glob("jobs/*/job.json")) or first.done()  # noqa: E731
        await wait_until(created, 15, poll_s=0.001)  # cut in the window before the answer
        at = time.monotonic()
        self._cut("launch drop")
        answered: JobInfo | None = None
        with contextlib.suppress(LinkError):
            answered = await first
        info: JobInfo = await self._launch()
        self.result.recovery_s.append(time.monotonic() - at)
        detected = self.watch.left_up_after(at)
        if detected is not None:
            self.result.detection_s.append(detected - at)
        fate = "was lost in the cut" if answered is None else "arrived before the cut"
        self.result.notes.append(
            f"the first launch's answer {fate}; the retry with its key returned job {info.id}"
        )
        if answered is not None and answered.id != info.id:
            self.result.violate(f"launch drop: the retry started job {info.id}, not {answered.id}")
        return await followed_ticker(self.session, info.id)

    async def _launch(self) -> JobInfo:
        self.launches += 1
        info: JobInfo = await request_when_up(
            self.session, JOBS_LAUNCH, LaunchParams(TICKER), key=self.key
        )
        return info

    async def _fault(self, label: str, kind: str, rng: random.Random, ticker: Ticker) -> bool:
        """Inject one fault and time it; False when the link did not come back."""
        await wait_until(lambda: is_up(self.session), RECOVER_WITHIN_S)
        await asyncio.sleep(rng.uniform(0.2, 1.2))
        daemon_before = self._daemon_pid()
        at = time.monotonic()
        if kind == "drop":
            self._cut(label)
        else:
            await self._restart(label)
        recovered = await self._time_recovery(label, at)
        if recovered and kind == "restart" and self._daemon_pid() == daemon_before:
            self.result.violate(f"{label}: the same daemon (pid {daemon_before}) answers after it")
        self._check_alive(label, ticker)
        return recovered

    def _cut(self, label: str) -> None:
        if self.relay.cut() == 0:
            self.result.violate(f"{label}: there was no connection to cut")
            return
        self.injected["drop"] += 1
        self.result.faults += 1

    async def _restart(self, label: str) -> None:
        stop = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agent", "stop", "--state-dir", str(self.state_dir),
            env=agent_env(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await stop.communicate()
        if stop.returncode != 0:
            self.result.violate(f"{label}: agent stop failed: {stderr.decode().strip()}")
            return
        self.injected["restart"] += 1
        self.result.faults += 1

    def _daemon_pid(self) -> int | None:
        link = self.session.link
        return link.hello_result.pid if link is not None and link.hello_result else None

    async def _time_recovery(self, label: str, at: float, *, log_flows: bool = True) -> bool:
        """Detection: the link leaves up. Recovery: up again, and new log bytes through it.

        Once the job has ended no bytes come: a ping answered on the new link is recovery then.
        """
        if not await wait_until(lambda: self.watch.left_up_after(at) is not None, DETECT_WITHIN_S):
            self.result.violate(f"{label}: the console did not notice in {DETECT_WITHIN_S:g} s")
            return False
        self.result.detection_s.append((self.watch.left_up_after(at) or at) - at)
        if not await wait_until(lambda: self._back(at, log_flows) is not None, RECOVER_WITHIN_S):
            self.result.violate(f"{label}: not back {RECOVER_WITHIN_S:g} s after it")
            return False
        self.result.recovery_s.append((self._back(at, log_flows) or at) - at)
        return True

    def _back(self, at: float, log_flows: bool) -> float | None:
        if log_flows:
            return self.watch.recovered_after(at)
        return self.watch.back_up_after(at, answered=True)

    def _check_alive(self, label: str, ticker: Ticker) -> None:
        if not self.death_seen and not ticker.alive():
            self.death_seen = True
            self.result.violate(f"{label}: the job's process {ticker.pid} died")

    async def _relaunch(self, label: str, ticker: Ticker) -> None:
        """A retried launch (its answer lost) returns the running job and starts nothing."""
        info = await self._launch()
        if info.id != ticker.job_id or info.pid != ticker.pid:
            self.result.violate(
                f"after {label}: the retried launch gave job {info.id} pid {info.pid}, "
                f"not {ticker.job_id} pid {ticker.pid}"
            )
        jobs = await own_jobs(self.session)
        if len(jobs) != 1:
            self.result.violate(f"after {label}: {len(jobs)} jobs, one launch key")

    async def _end_while_down(self, rng: random.Random, ticker: Ticker) -> bool:
        """Cut the link, SIGTERM the job while it is down; the reattach must report its end."""
        await wait_until(lambda: is_up(self.session), RECOVER_WITHIN_S)
        await asyncio.sleep(rng.uniform(0.2, 1.2))
        self._check_alive("final drop", ticker)
        at = time.monotonic()
        self._cut("final drop")
        if ticker.alive():
            kill_process(ticker.pid, signal.SIGTERM)
        if not await self._time_recovery("final drop", at, log_flows=False):
            return False
        ended = await self._ended(ticker)
        if ended is None or (ended.state, ended.exit_signal) != ("killed", "SIGTERM"):
            seen = f"{ended.state}, signal {ended.exit_signal}" if ended else "still running"
            self.result.violate(f"after the final drop the job reads {seen}, not killed by SIGTERM")
        return True

    async def _ended(self, ticker: Ticker) -> JobInfo | None:
        deadline = time.monotonic() + ENDED_WITHIN_S
        while time.monotonic() < deadline:
            job = next((j for j in await own_jobs(self.session) if j.id == ticker.job_id), None)
            if job is not None and job.state not in LIVE_JOB_STATES:
                return job
            await asyncio.sleep(0.1)
        return None

    async def _count(self, ticker: Ticker) -> None:
        await check_log(self.result, self.watch, ticker)
        jobs = await own_jobs(self.session)
        if len(jobs) != 1:
            self.result.violate(f"{len(jobs)} jobs after {self.launches} launches with one key")
        self.result.notes.append(
            f"{self.injected['drop']} drops, {self.injected['restart']} agent restarts; "
            f"{self.launches} launch requests with one idempotency key gave {len(jobs)} job(s); "
            f"log lines: {self.result.attempted} written, {self.result.acknowledged} received"
        )
