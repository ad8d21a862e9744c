"""One connection attempt of the host-key matrix, through the link or the CLI, and its verdict.

A refusal must name what `must_show` lists, leave known_hosts as it was and leave the server
without a session; a connection is only right for a case that must connect, and then the server
must have seen it and no agent-forwarding request.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import asyncssh

import console
from agent.protocol import PING, PingParams
from console.config import HostConfig
from console.link.agent_link import LinkError
from console.link.ssh_link import connect_options, open_ssh_link
from faults.hostile._host_key_servers import WitnessedServer, environment
from faults.result import ScenarioResult
from tests.support.waits import wait_until

CLI_TIMEOUT_S = 60.0
WITNESS_WAIT_S = 5.0
REPO = Path(console.__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Attempt:
    """One case against one server, and what it must lead to."""

    label: str
    server: WitnessedServer
    host: HostConfig
    must_show: tuple[str, ...]
    """What a refusal must name; empty when the attempt must connect."""
    hostile: bool


@dataclass(frozen=True, slots=True)
class _Before:
    """What the server and known_hosts looked like before the attempt."""

    sessions: int
    agent_requests: int
    known_hosts: bytes | None

    @classmethod
    def of(cls, attempt: Attempt) -> _Before:
        server = attempt.server
        requests = server.agent_requests() if server.agent_requests else 0
        return cls(server.sessions(), requests, _known_hosts_bytes(attempt.host))


def _known_hosts_bytes(host: HostConfig) -> bytes | None:
    path = Path(host.known_hosts or "~/.ssh/known_hosts").expanduser()
    try:
        return path.read_bytes()
    except OSError:  # missing, a directory, or unreadable: compared as "no bytes"
        return None


async def attempt_link(attempt: Attempt, result: ScenarioResult) -> str:
    """Connect with `open_ssh_link` (connect, bootstrap, hello) and judge what happened."""
    result.attempted += 1
    before = _Before.of(attempt)
    try:
        link = await open_ssh_link(attempt.host)
    except LinkError as exc:
        return _judge_refusal(attempt, str(exc), before, result)
    try:
        await link.call(PING, PingParams())
    finally:
        await link.close()
    return await _judge_connection(attempt, before, result)


async def attempt_cli(attempt: Attempt, folder: Path, workdir: Path, result: ScenarioResult) -> str:
    """Run `python -m console --config F status gpu` as a user would and judge it."""
    config = folder / "eagle-console.toml"
    host = attempt.host
    config.write_text(
        attempt.server.endpoint.config_toml(
            "gpu",
            python=sys.executable,
            state_dir=Path(host.state_dir),
            datasets_root=workdir / "datasets",
            known_hosts=host.known_hosts or "",
            ssh_config=host.ssh_config or "",
        )  # fmt: skip
    )
    result.attempted += 1
    before = _Before.of(attempt)
    code, output = await _run_status(config)
    if "Traceback" in output:
        result.violate(f"{attempt.label}: the CLI printed a traceback: {output[-300:]}")
    if code == 0:
        return await _judge_connection(attempt, before, result)
    if code != 1:
        result.violate(f"{attempt.label}: the CLI exited {code}, not 1, on a refusal")
    return _judge_refusal(attempt, output, before, result)


async def _run_status(config: Path) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console", "--config", str(config), "status", "gpu",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="300"),
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode or 0, out.decode(errors="replace")


def _judge_refusal(attempt: Attempt, message: str, before: _Before, result: ScenarioResult) -> str:
    if not attempt.must_show:
        result.violate(f"{attempt.label}: refused, but it must connect: {message.strip()}")
        return "REFUSED"
    if attempt.server.sessions() != before.sessions:
        result.violate(f"{attempt.label}: the server opened a session on a refused attempt")
    if _known_hosts_bytes(attempt.host) != before.known_hosts:
        result.violate(f"{attempt.label}: known_hosts was written on a refusal")
    missing = [fragment for fragment in attempt.must_show if fragment not in message]
    if missing:
        result.violate(f"{attempt.label}: the refusal does not show {missing}: {message.strip()}")
        return "refused without naming the key"
    result.acknowledged += 1
    if "revoked" in attempt.label and "revoked" not in _without_paths(message, attempt.host):
        return "refused, fingerprint shown (the message calls the key unknown, not revoked)"
    return "refused, " + ("file named" if "cannot read" in message else "fingerprint shown")


def _without_paths(message: str, host: HostConfig) -> str:
    return message.replace(str(host.known_hosts), "known_hosts")


async def _judge_connection(attempt: Attempt, before: _Before, result: ScenarioResult) -> str:
    server = attempt.server
    if attempt.must_show:
        result.violate(f"{attempt.label}: SESSION ESTABLISHED with an untrusted host key")
        return "CONNECTED"
    if not await wait_until(lambda: server.sessions() > before.sessions, WITNESS_WAIT_S):
        result.violate(f"{attempt.label}: connected, but the server's witness saw no session")
    if connect_options(attempt.host).get("agent_forwarding") is not False:
        result.violate(f"{attempt.label}: the client's options allow agent forwarding")
    if server.agent_requests is not None and server.agent_requests() != before.agent_requests:
        result.violate(f"{attempt.label}: the client asked the server to forward its agent")
    if attempt.hostile:
        result.acknowledged += 1
    return "connected, agent forwarding off"


async def check_agent_witness(
    server: WitnessedServer, socket: str | None, result: ScenarioResult
) -> None:
    """Ask for agent forwarding on purpose once: the witness must see it, or it proves nothing."""
    count = server.agent_requests
    if count is None:
        return
    before, endpoint = count(), server.endpoint
    with environment("SSH_AUTH_SOCK", socket or str(endpoint.identity.parent / "no-agent")):
        async with asyncssh.connect(
            endpoint.host, port=endpoint.port, username=endpoint.user,
            known_hosts=str(endpoint.known_hosts), client_keys=[str(endpoint.identity)],
            agent_forwarding=True,
        ) as conn:  # fmt: skip
            await conn.run("true", check=False)
    if not await wait_until(lambda: count() > before, WITNESS_WAIT_S):
        result.violate("the agent-forwarding witness missed a request made on purpose")
