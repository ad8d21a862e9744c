"""Build the demo, run the console on it, and leave nothing running after."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from console.config import HostConfig
from console.demo.config_file import write_demo_config
from console.demo.services import (
    end_process,
    free_port,
    launch_runs,
    launch_server,
    start_ssh_server,
    stop_agent,
    stop_everything,
    wait_for_health,
)
from console.demo.workspace import Workspace, build_workspace
from console.hosts import Opener
from console.link import AgentLink, LinkError
from console.local_link import open_local_link
from console.ssh_link import open_ssh_link


def run_demo(folder: Path | None, keep: bool, ssh: bool) -> int:
    """The whole demo; returns the exit code."""
    space = Workspace(folder or Path(tempfile.mkdtemp(prefix="eagle-demo-")))
    signal.signal(signal.SIGHUP, _hang_up)  # a closed terminal still stops what the demo started
    say(f"eagle-console demo: building the workspace in {space.root} ...")
    build_workspace(space)
    ssh_server: subprocess.Popen[bytes] | None = None
    opener: Opener | None = None
    try:
        access = None
        if ssh:
            ssh_server, access = start_ssh_server(space)
            say(
                f"a real SSH server listens on 127.0.0.1:{access.port}; its key is pinned in {access.known_hosts}"
            )
        host = write_demo_config(space, free_port(), access)
        opener = _opener(space, host, ssh)
        say(
            f"the config for this host is {space.config}; starting the agent, the server and 8 runs ..."
        )
        asyncio.run(start_pipeline(opener, host, nonce=secrets.token_hex(4)))
        _run_console(opener, host)
    finally:
        _tear_down(space, opener, ssh_server, keep)
    return 0


def _opener(space: Workspace, host: HostConfig, ssh: bool) -> Opener:
    async def local() -> AgentLink:
        return await open_local_link(space.state, host.pipeline)

    async def over_ssh() -> AgentLink:
        return await open_ssh_link(host)

    return over_ssh if ssh else local


async def start_pipeline(opener: Opener, host: HostConfig, nonce: str) -> None:
    """The server as the agent's GPU job, then, once it answers, one run per dataset."""
    link = await opener()
    try:
        await launch_server(link, nonce)
        url = host.pipeline.sglang_url or ""
        await asyncio.to_thread(wait_for_health, url, Path(host.pipeline.sglang_log or ""))
        await launch_runs(link, nonce)
    finally:
        await link.close()


def _run_console(opener: Opener, host: HostConfig) -> None:
    from console.app import ConsoleApp

    ConsoleApp({"demo": opener}, host_configs={"demo": host}).run()


def _tear_down(
    space: Workspace, opener: Opener | None, ssh_server: subprocess.Popen[bytes] | None, keep: bool
) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal may be gone: finish regardless
    if opener is not None:
        say("stopping the demo's runs (each drains its requests in flight), then the server ...")
        try:
            asyncio.run(stop_everything(opener))
        except (LinkError, OSError) as exc:  # go on: the agent, servers and workspace still go
            say(f"could not stop the jobs through the agent: {exc}")
    stop_agent(space)
    if ssh_server is not None:
        end_process(ssh_server)
    if keep:
        say(f"workspace kept in {space.root}")
    else:
        shutil.rmtree(space.root, ignore_errors=True)


def _hang_up(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def say(line: str) -> None:
    """One line of the demo's own narration, before and after the console (if a terminal is left)."""
    with contextlib.suppress(OSError):
        print(line, flush=True)  # noqa: T201
