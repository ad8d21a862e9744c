"""A busy agent is not a dead link: the console keeps it while the transport lives.

The link used to be cut by the console when a ping went unanswered for 10 s, and the agent
answered one request at a time, so a stop waiting out a job's grace held back the ping behind
it: `R` and `k` lost their link half-way and left runs stopped. Here the agent is made slow for
real (its daemon frozen with SIGSTOP, a stop that waits out a long grace).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from agent.host.signals import kill_group, kill_process
from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_STOP,
    PING,
    Event,
    JobEvent,
    JobInfo,
    JobSpec,
    LaunchParams,
    PingParams,
    PipelineConfig,
    StopParams,
    StopResult,
)
from agent.state import read_json
from console.link import host_connection
from console.link.agent_link import AgentLink
from console.link.host_connection import HostConnection, LinkState
from console.link.local_link import open_local_link
from tests.support.operations import local_link
from tests.support.waits import until

DEAF = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)
"""A job that ignores its stop signal: a stop waits out the whole grace before SIGTERM."""


async def sent_sigint(link: AgentLink, job_id: str) -> None:
    """Returns once the agent says it sent the job its stop signal (events on the link)."""
    async with asyncio.timeout(30):
        while True:
            event = await link.next_event()
            assert event is not None, "the link closed before the stop signal was sent"
            payload = event.data
            if not isinstance(payload, JobEvent) or payload.job.id != job_id:
                continue
            if payload.message.startswith("sent SIGINT"):
                return


def deaf_pipeline(grace_s: float) -> PipelineConfig:
    deaf = JobSpec((sys.executable, "-c", DEAF), stop_signal="SIGINT", grace_s=grace_s)
    return PipelineConfig(jobs={"deaf": deaf})


async def test_a_ping_is_answered_while_a_stop_waits_out_its_grace(state_dir: Path) -> None:
    async with local_link(state_dir, deaf_pipeline(grace_s=600.0)) as link:
        job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams("deaf"), idempotency_key="deaf-1")
        log = Path(job.log_path or "")
        await until(lambda: log.is_file() and "ready" in log.read_text())
        stop = asyncio.ensure_future(
            link.call(JOBS_STOP, StopParams(job.id), idempotency_key="stop-1", timeout_s=900)
        )
        await sent_sigint(link, job.id)  # before it, a kill would leave nothing to stop
        for _ in range(3):  # each answered while the stop still waits on a job ignoring SIGINT
            await link.call(PING, PingParams(), timeout_s=30)
            assert not stop.done()
        kill_group(job.pgid or 0, signal.SIGKILL)  # end the grace: the stop then reports the end
        result: StopResult = await stop
        assert result.outcome == "stopped"


async def test_a_frozen_agent_keeps_its_link_and_says_it_is_silent(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(host_connection, "SILENT_AFTER_S", 0.3)
    monkeypatch.setattr(host_connection, "PING_EVERY_S", 0.1)
    states: list[LinkState] = []
    opened: list[AgentLink] = []

    async def opener() -> AgentLink:
        opened.append(await open_local_link(state_dir, PipelineConfig()))
        return opened[-1]

    def on_event(host: str, event: Event) -> None:
        del host, event

    connection = HostConnection("gpu", opener, states.append, on_event)
    runner = asyncio.create_task(connection.run())
    daemon = 0
    try:
        await until(lambda: connection.state.latency_ms is not None)
        daemon = int(read_json(state_dir / "daemon.json")["pid"])
        kill_process(daemon, signal.SIGSTOP)
        await until(lambda: "silent" in connection.state.detail)
        assert connection.state.status == "up"
        kill_process(daemon, signal.SIGCONT)
        await until(lambda: connection.state.latency_ms is not None)
    finally:
        if daemon:
            kill_process(daemon, signal.SIGCONT)
        runner.cancel()
        if connection.link is not None:
            await connection.link.close()
    assert len(opened) == 1, "the console reconnected: it cut a link whose transport lived"
    assert [s.status for s in states if s.status != "up"] == ["connecting"]
    assert connection.state.detail == ""
