"""`eagle-console doctor HOST`: every precondition of a working link, checked and explained.

SSH and the host key, the remote Python and its version, aiohttp (for SGLang probes), the agent
bundle and daemon, the datasets root, SGLang, nvidia-smi, the target's tokenizer (loaded on
the host with the configured trust setting) and the webhook's lost notifications: one line
each, with what to do.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from dataclasses import dataclass

from agent.protocol import SNAPSHOT, Snapshot, SnapshotParams
from console.cli.doctor_tokenizer import tokenizer_line
from console.cli.doctor_webhook import webhook_line
from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.ssh_link import connect, open_ssh_link, probe_python

PROBE_WAIT_S = 12.0


@dataclass(frozen=True, slots=True)
class Check:
    """One precondition and how it went."""

    name: str
    ok: bool
    detail: str


async def run_doctor(host: HostConfig) -> list[Check]:
    """All checks, in order; later ones are skipped when an earlier one makes them moot."""
    checks: list[Check] = []
    try:
        conn = await connect(host)
    except LinkError as exc:
        return [Check("ssh", False, str(exc))]
    checks.append(
        Check("ssh", True, f"connected to {host.ssh}, host key trusted, agent forwarding off")
    )
    try:
        python = await probe_python(conn, host)
        checks.append(
            Check("python", True, f"{host.python} is Python {'.'.join(map(str, python.version))}")
        )
        checks.append(await _aiohttp(conn, host))
    except LinkError as exc:
        checks.append(Check("python", False, str(exc)))
        return checks
    finally:
        conn.close()
    try:
        link = await open_ssh_link(host)
    except LinkError as exc:
        return [*checks, Check("agent", False, str(exc))]
    try:
        checks += await _agent_checks(link)
        ok, detail = await tokenizer_line(link, host.name, host.pipeline)
        return [
            *checks,
            Check("tokenizer", ok, detail),
            Check("webhook", *await webhook_line(link)),
        ]
    finally:
        await link.close()


async def _aiohttp(conn: object, host: HostConfig) -> Check:
    command = shlex.join([host.python, "-c", "import aiohttp; print(aiohttp.__version__)"])
    result = await conn.run(command, check=False, timeout=30)  # type: ignore[attr-defined]
    if result.exit_status == 0:
        return Check("aiohttp", True, f"aiohttp {str(result.stdout).strip()} (SGLang probes work)")
    return Check("aiohttp", False, f"not importable by {host.python}: SGLang probes will say so; "
                 "`pip install aiohttp` in that environment")  # fmt: skip


async def _agent_checks(link: AgentLink) -> list[Check]:
    hello = link.hello_result
    checks = [
        Check(
            "agent",
            True,
            f"agent {hello.agent_version if hello else '?'} running (pid {hello.pid if hello else '?'})",
        )
    ]
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
    server = snapshot.server
    if server is None or server.url is None:
        checks.append(
            Check("sglang", False, "no [sglang] url configured, or no probe answered yet")
        )
    else:
        checks.append(Check("sglang", bool(server.healthy), f"{server.url}: {server.detail or 'healthy'}"
                            + (f", model {server.model_path}" if server.model_path else "")))  # fmt: skip
    gpus = f"{len(snapshot.gpus)} GPU(s)" if snapshot.gpus else snapshot.gpu_note or "no reading"
    checks.append(Check("gpus", bool(snapshot.gpus), gpus))
    return checks


async def _snapshot_with_probes(link: AgentLink) -> Snapshot:
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        if snapshot.server is not None or time.monotonic() > deadline:
            return snapshot
        await asyncio.sleep(0.2)
