"""What the demo starts: the loopback SSH server, the SGLang stand-in and the runs."""

from __future__ import annotations

import asyncio
import getpass
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from agent.protocol import AUTOPILOT_CONTROL, JOBS_LAUNCH, AutopilotParams, LaunchParams
from console.demo.config_file import SshAccess
from console.demo.workspace import DATASETS, OLD_RUN, Workspace, bundle_env
from console.link.agent_link import AgentLink, LinkError

START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port nothing listens on now (the simulator binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_ssh_server(space: Workspace, children: list[subprocess.Popen[bytes]]) -> SshAccess:
    """`python -m console.link.loopback_ssh` in its own process, so the console reaches it as a box.

    It joins `children` (to be reaped); the teardown finds it by its command line, like the rest.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "console.link.loopback_ssh", str(space.ssh)],
        env=bundle_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    children.append(process)
    port_file = space.ssh / "port"
    _wait_until(port_file.exists, process, "the loopback SSH server")
    ssh_config = space.ssh / "ssh_config"
    ssh_config.write_text("# empty: the demo's host needs nothing from ~/.ssh/config\n")
    return SshAccess(
        int(port_file.read_text()), getpass.getuser(), space.ssh / "id_ed25519",
        space.ssh / "known_hosts", ssh_config,
    )  # fmt: skip


async def wait_for_health(url: str, server_log: Path) -> None:
    """Wait until the SGLang stand-in answers /health.

    Each probe runs in a thread for at most a second, so an interrupted start-up (a hang-up)
    never waits on a probe for longer than that.
    """
    deadline = time.monotonic() + START_TIMEOUT_S
    while not await asyncio.to_thread(_healthy, url):
        if time.monotonic() > deadline:
            raise LinkError(f"the SGLang simulator did not answer /health (see {server_log})")
        await asyncio.sleep(0.1)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as answer:
            return int(answer.status) == 200
    except (urllib.error.URLError, OSError):
        return False


async def launch_server(link: AgentLink, nonce: str) -> None:
    """The SGLang stand-in, as a GPU job of the agent's, like the real server on a box.

    `nonce` keeps the idempotency keys of a demo rerun in the same --dir from meeting the last's.
    """
    await link.call(JOBS_LAUNCH, LaunchParams("sglang"), idempotency_key=f"demo-{nonce}-sglang")


async def launch_runs(link: AgentLink, nonce: str) -> None:
    """One run per dataset; the old invocation on B3_math."""
    for name in DATASETS:
        job = "inference-old" if name == OLD_RUN else "inference"
        key = f"demo-{nonce}-{name}"
        await link.call(JOBS_LAUNCH, LaunchParams(job, name), idempotency_key=key)


async def start_autopilot(link: AgentLink, nonce: str) -> None:
    """The autopilot, on from the start: the demo's runs go on to the verdict by themselves."""
    key = f"demo-{nonce}-autopilot"
    await link.call(AUTOPILOT_CONTROL, AutopilotParams("start"), idempotency_key=key)


def _wait_until(done: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not done():
        if process.poll() is not None or time.monotonic() > deadline:
            raise LinkError(f"{what} did not start (exit status {process.poll()})")
        time.sleep(0.05)
