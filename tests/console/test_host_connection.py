"""A host's link comes back by itself after the agent dies, and log following resumes exactly."""

from __future__ import annotations

import asyncio
import getpass
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.host.signals import kill_process
from agent.protocol import Event, LogChunk, PipelineConfig, Snapshot
from agent.state import read_json
from console.config import HostConfig, SshTarget
from console.link.agent_link import AgentLink
from console.link.host_connection import HostConnection, LinkState
from console.link.ssh_link import open_ssh_link
from tests.support.local_app import local_opener
from tests.support.waits import until


@pytest.mark.slow
async def test_the_link_recovers_after_the_agent_is_killed(tmp_path: Path, state_dir: Path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("first\n")
    config = PipelineConfig(sglang_log=str(log))
    states: list[LinkState] = []
    snapshots: list[Snapshot] = []
    chunks: list[LogChunk] = []

    def on_event(host: str, event: Event) -> None:
        if isinstance(event.data, Snapshot):
            snapshots.append(event.data)
        elif isinstance(event.data, LogChunk):
            chunks.append(event.data)

    connection = HostConnection("gpu", local_opener(state_dir, config), states.append, on_event)
    runner = asyncio.create_task(connection.run())
    try:
        await until(lambda: connection.state.status == "up" and snapshots)
        await connection.follow_log("sglang", 0)
        await until(lambda: "".join(c.text for c in chunks) == "first\n")
        kill_process(read_json(state_dir / "daemon.json")["pid"], signal.SIGKILL)
        await until(lambda: connection.state.status == "down")
        with log.open("a") as handle:
            handle.write("while down\n")
        await until(lambda: connection.state.status == "up")
        count = len(snapshots)
        with log.open("a") as handle:
            handle.write("after\n")
        await until(
            lambda: len(snapshots) > count and "".join(c.text for c in chunks).endswith("after\n")
        )
    finally:
        runner.cancel()
        if connection.link is not None:
            await connection.link.close()
    assert states[0].status == "connecting"
    assert "down" in [s.status for s in states]
    assert "".join(c.text for c in chunks) == "first\nwhile down\nafter\n"
    assert any(s.latency_ms is not None for s in states)


@pytest.mark.slow
async def test_an_unreachable_host_backs_off_and_keeps_trying() -> None:
    from console.link.agent_link import LinkError

    attempts: list[float] = []

    async def opener() -> AgentLink:
        attempts.append(time.monotonic())
        raise LinkError("gpu: cannot reach root@10.0.0.9: Connection refused")

    states: list[LinkState] = []
    connection = HostConnection("gpu", opener, states.append, lambda host, event: None)
    runner = asyncio.create_task(connection.run())
    await until(lambda: len(attempts) >= 3, timeout_s=10)
    runner.cancel()
    downs = [s for s in states if s.status == "down"]
    assert downs[0].detail.endswith("Connection refused")
    assert attempts[2] - attempts[1] > attempts[1] - attempts[0] > 0.5, "backoff grows"


async def test_a_server_that_dies_mid_link_is_noticed_and_the_session_ends_cleanly(
    tmp_path: Path, state_dir: Path
) -> None:
    folder = tmp_path / "ssh"
    server = subprocess.Popen(
        [sys.executable, "-m", "console.link.loopback_ssh", str(folder)], start_new_session=True
    )
    try:
        await until(lambda: (folder / "port").exists())
        (tmp_path / "ssh_config").write_text("")
        host = HostConfig(
            "gpu", SshTarget("127.0.0.1", getpass.getuser(), int((folder / "port").read_text())),
            python=sys.executable, state_dir=str(state_dir), known_hosts=str(folder / "known_hosts"),
            identity=str(folder / "id_ed25519"), ssh_config=str(tmp_path / "ssh_config"),
        )  # fmt: skip
        states: list[LinkState] = []
        connection = HostConnection(
            "gpu", lambda: open_ssh_link(host), states.append, lambda *_: None
        )
        runner = asyncio.create_task(connection.run())
        await until(lambda: connection.state.status == "up")
        server.kill()  # the SSH connection dies with asyncssh's ConnectionLost, not an OSError
        await until(lambda: connection.state.status != "up", timeout_s=3)  # before any ping
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
        assert runner.cancelled(), "the connection must end by its cancel, not by an error"
    finally:
        server.kill()
        server.wait()
