"""`eagle-console doctor HOST`: every precondition of a working link, checked and explained.

SSH and the host key (or, for `ssh = "local"`, nothing to connect to), the remote Python and its
version, aiohttp (for SGLang probes), the agent bundle and daemon, whether the box runs this
config, the datasets root, SGLang, nvidia-smi, the target's tokenizer (loaded on the host
with the configured trust setting), the webhook's lost notifications and whether the agent
starts at boot: one line each, with what to do.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from dataclasses import dataclass

from agent.protocol import (
    AUTOSTART_STATUS,
    SNAPSHOT,
    AutostartStatus,
    AutostartStatusParams,
    ServerStats,
    Snapshot,
    SnapshotParams,
)
from console.cli.doctor_tokenizer import tokenizer_line
from console.cli.doctor_webhook import webhook_line
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.host_link import open_host_link
from console.link.local_link import run_local_python
from console.link.ssh_link import (
    CONNECT_TIMEOUT_S,
    PROBE_SCRIPT,
    RemotePython,
    connect,
    probe_python,
    read_probe,
)
from console.model.config_drift import drift_text

PROBE_WAIT_S = 12.0
AIOHTTP_WAIT_S = 30.0
AIOHTTP_SCRIPT = "import aiohttp; print(aiohttp.__version__)"


@dataclass(frozen=True, slots=True)
class Check:
    """One precondition and how it went."""

    name: str
    ok: bool
    detail: str


async def run_doctor(host: HostConfig) -> list[Check]:
    """All checks, in order; later ones are skipped when an earlier one makes them moot."""
    checks, reachable = await (_local_reach(host) if host.is_local else _ssh_reach(host))
    if not reachable:
        return checks
    try:
        link = await open_host_link(host)
    except LinkError as exc:
        return [*checks, Check("agent", False, str(exc))]
    try:
        checks += await _agent_checks(
            link, host.name, sorted(n for n, j in host.pipeline.jobs.items() if j.gpu)
        )
        ok, detail = await tokenizer_line(link, host.name, host.pipeline)
        return [
            *checks,
            Check("tokenizer", ok, detail),
            Check("webhook", *await webhook_line(link)),
            await _autostart_check(link, host.name),
        ]
    finally:
        await link.close()


async def _ssh_reach(host: HostConfig) -> tuple[list[Check], bool]:
    """SSH with the host key, then the host's Python and aiohttp; and whether to go on."""
    try:
        conn = await connect(host)
    except LinkError as exc:
        return [Check("ssh", False, str(exc))], False
    checks = [
        Check("ssh", True, f"connected to {host.ssh}, host key trusted, agent forwarding off")
    ]
    try:
        checks.append(_python_line(host, await probe_python(conn, host)))
        command = shlex.join([host.python, "-c", AIOHTTP_SCRIPT])
        result = await conn.run(command, check=False, timeout=AIOHTTP_WAIT_S)
        checks.append(_aiohttp_line(host, result.exit_status, str(result.stdout)))
    except LinkError as exc:
        return [*checks, Check("python", False, str(exc))], False
    finally:
        conn.close()
    return checks, True


async def _local_reach(host: HostConfig) -> tuple[list[Check], bool]:
    """`ssh = "local"`: this machine's Python and aiohttp, run as subprocesses; and whether to go on."""
    checks = [Check("local", True, 'ssh = "local": the agent runs on this machine, no SSH')]
    status, out, err = await run_local_python(host.python, PROBE_SCRIPT, CONNECT_TIMEOUT_S)
    try:
        checks.append(_python_line(host, read_probe(host, status, out, err)))
    except LinkError as exc:
        return [*checks, Check("python", False, str(exc))], False
    status, out, _ = await run_local_python(host.python, AIOHTTP_SCRIPT, AIOHTTP_WAIT_S)
    return [*checks, _aiohttp_line(host, status, out)], True


def _python_line(host: HostConfig, python: RemotePython) -> Check:
    return Check("python", True, f"{host.python} is Python {'.'.join(map(str, python.version))}")


def _aiohttp_line(host: HostConfig, status: int | None, stdout: str) -> Check:
    if status == 0:
        return Check("aiohttp", True, f"aiohttp {stdout.strip()} (SGLang probes work)")
    return Check("aiohttp", False, f"not importable by {host.python}: SGLang probes will say so; "
                 "`pip install aiohttp` in that environment")  # fmt: skip


async def _agent_checks(link: AgentLink, host: str, gpu_jobs: list[str]) -> list[Check]:
    hello = link.hello_result
    checks = [
        Check(
            "agent",
            True,
            f"agent {hello.agent_version if hello else '?'} running (pid {hello.pid if hello else '?'})",
        )
    ]
    checks.append(_config_check(link, host))
    snapshot = await _snapshot_with_probes(link)
    root_alert = next((a for a in snapshot.alerts if a.kind == "datasets_root"), None)
    if snapshot.datasets_root is None:
        checks.append(Check("datasets", False, "no [datasets] root configured for this host"))
    elif root_alert is not None:
        checks.append(Check("datasets", False, root_alert.message))
    else:
        checks.append(
            Check(
                "datasets", True, f"{snapshot.datasets_root}: {len(snapshot.datasets)} dataset(s)"
            )
        )
    checks.append(sglang_line(snapshot.server))
    checks.append(gpus_line(snapshot, gpu_jobs))
    return checks


def _config_check(link: AgentLink, host: str) -> Check:
    """Whether the box runs this console's config: the checks below read the box's own.

    An agent keeps the config it runs until `eagle-console apply`; a file edited since would
    otherwise be checked as if it were in force.
    """
    if link.config_differences:
        return Check("config", False, drift_text(host, link.config_differences))
    return Check("config", True, "the box runs this config")


def sglang_line(server: ServerStats | None) -> Check:
    """The server's health; a key it refuses (or wants and has none of) fails too.

    /health needs no key, so a server that turns the key away is up: the line said `ok` while
    every job that sends the key failed.
    """
    if server is None or server.url is None:
        return Check("sglang", False, "no [sglang] url configured, or no probe answered yet")
    model = f", model {server.model_path}" if server.model_path else ""
    ok = bool(server.healthy) and server.key_problem is None
    return Check("sglang", ok, f"{server.url}: {server.detail or 'healthy'}{model}")


def gpus_line(snapshot: Snapshot, gpu_jobs: list[str]) -> Check:
    """The GPUs seen; none is a failure only where a configured job needs one (`gpu = true`).

    A box that serves through a hosted API, or that only holds the data, needs no GPU.
    """
    if snapshot.gpus:
        return Check("gpus", True, f"{len(snapshot.gpus)} GPU(s)")
    seen = snapshot.gpu_note or "no reading"
    if not gpu_jobs:
        return Check("gpus", True, f"none ({seen}); no configured job has gpu = true")
    return Check("gpus", False, f"{seen}; the jobs {', '.join(gpu_jobs)} have gpu = true")


async def _autostart_check(link: AgentLink, host: str) -> Check:
    """Whether the agent comes back by itself after a reboot: a note, never a failure."""
    status: AutostartStatus = await link.call(AUTOSTART_STATUS, AutostartStatusParams())
    if status.installed:
        return Check("autostart", True, f"@reboot line installed: {status.cron_line}")
    how = (
        f"`eagle-console autostart {host} --install` adds an @reboot line"
        if status.cron_available
        else f"no crontab here: run this from the container's entrypoint: {status.command}"
    )
    return Check(
        "autostart", True,
        f"not set up: after a reboot the agent (and the jobs it restarts) waits for a console to "
        f"connect; {how}",
    )  # fmt: skip


async def _snapshot_with_probes(link: AgentLink) -> Snapshot:
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        if snapshot.server is not None or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.2)
