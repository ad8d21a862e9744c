"""What the demo starts and stops: the loopback SSH server, the SGLang stand-in and the runs."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from agent.protocol import JobInfo, JobsList, JobsParams, LaunchParams, StopParams
from console.demo.config_file import SshAccess
from console.demo.workspace import DATASETS, OLD_RUN, Workspace, bundle_env
from console.hosts import Opener
from console.link import AgentLink, LinkError

START_TIMEOUT_S = 30.0


def free_port() -> int:
    """A loopback port nothing listens on now (the simulator binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_ssh_server(space: Workspace) -> tuple[subprocess.Popen[bytes], SshAccess]:
    """`python -m console.loopback_ssh` in its own process, so the console reaches it as a box."""
    process = subprocess.Popen(
        [sys.executable, "-m", "console.loopback_ssh", str(space.ssh)],
        env=bundle_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    port_file = space.ssh / "port"
    _wait_until(port_file.exists, process, "the loopback SSH server")
    ssh_config = space.ssh / "ssh_config"
    ssh_config.write_text("# empty: the demo's host needs nothing from ~/.ssh/config\n")
    access = SshAccess(
        int(port_file.read_text()), getpass.getuser(), space.ssh / "id_ed25519",
        space.ssh / "known_hosts", ssh_config,
    )  # fmt: skip
    return process, access


def wait_for_health(url: str, server_log: Path) -> None:
    """Block until the SGLang stand-in answers /health."""

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as answer:
                return int(answer.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    deadline = time.monotonic() + START_TIMEOUT_S
    while not healthy():
        if time.monotonic() > deadline:
            raise LinkError(f"the SGLang simulator did not answer /health (see {server_log})")
        time.sleep(0.1)


async def launch_server(link: AgentLink, nonce: str) -> None:
    """The SGLang stand-in, as a GPU job of the agent's, like the real server on a box.

    `nonce` keeps the idempotency keys of a demo rerun in the same --dir from meeting the last's.
    """
    await link.request(
        "jobs.launch", LaunchParams("sglang"), idempotency_key=f"demo-{nonce}-sglang"
    )


async def launch_runs(link: AgentLink, nonce: str) -> None:
    """One run per dataset; the old invocation on B3_math."""
    for name in DATASETS:
        job = "inference-old" if name == OLD_RUN else "inference"
        key = f"demo-{nonce}-{name}"
        await link.request("jobs.launch", LaunchParams(job, name), idempotency_key=key)


async def stop_everything(opener: Opener) -> None:
    """Stop every job the demo's agent runs: the runs first (they drain), then the server."""
    try:
        link = await opener()
    except LinkError:  # e.g. the agent was started from other code: a second connect upgrades it
        link = await opener()
    try:
        listing: JobsList = await link.request("jobs.list", JobsParams())
        live = [j for j in listing.jobs if not j.external and j.state in ("starting", "running")]
        await _stop_all(link, [j for j in live if j.kind != "server"])
        await _stop_all(link, [j for j in live if j.kind == "server"])
    finally:
        await link.close()


async def _stop_all(link: AgentLink, jobs: list[JobInfo]) -> None:
    stops = [
        link.request(
            "jobs.stop", StopParams(job.id), idempotency_key=f"demo-stop-{job.id}", timeout_s=120
        )
        for job in jobs
    ]
    await asyncio.gather(*stops, return_exceptions=True)


def stop_agent(space: Workspace) -> None:
    """The daemon goes too: the demo leaves nothing running."""
    subprocess.run(
        [sys.executable, "-m", "agent", "stop", "--state-dir", str(space.state)],
        env=bundle_env(), check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def end_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it is still there after ten seconds."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


def _wait_until(done: Callable[[], bool], process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not done():
        if process.poll() is not None or time.monotonic() > deadline:
            raise LinkError(f"{what} did not start (exit status {process.poll()})")
        time.sleep(0.05)
