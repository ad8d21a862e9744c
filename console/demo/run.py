"""Build the demo, run the console on it, and leave nothing running after."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from console.config import HostConfig, console_log_path
from console.demo.chaos import misbehave
from console.demo.config_file import write_demo_config
from console.demo.interrupts import DemoInterrupts
from console.demo.processes import end_demo_processes
from console.demo.services import (
    free_port,
    launch_runs,
    launch_server,
    start_autopilot,
    start_ssh_server,
    wait_for_health,
)
from console.demo.side_links import SideLinks
from console.demo.stale_capture import refuse_then_make_room
from console.demo.workspace import Workspace, build_workspace
from console.link.agent_link import AgentLink
from console.link.bundle import demo_bundle
from console.link.host_connection import Opener
from console.link.host_link import open_host_link


def run_demo(folder: Path | None, keep: bool, ssh: bool) -> int:
    """The whole demo; returns the exit code (128 + the signal's number when one ended it)."""
    interrupts = DemoInterrupts()
    interrupts.install()  # a closed terminal, Ctrl+C or SIGTERM: the teardown still runs
    space = Workspace((folder or Path(tempfile.mkdtemp(prefix="eagle-demo-"))).absolute())
    children: list[subprocess.Popen[bytes]] = []
    side = SideLinks()

    def tear_down() -> None:
        side.close()  # first: a thread's look must not start an agent behind the teardown
        _tear_down(space, keep, interrupts)

    teardown = OneTeardown(tear_down)

    def stuck() -> None:  # the console did not end when asked: end the demo without it
        interrupts.tearing_down()
        teardown.run()
        _leave_the_terminal()
        os._exit(interrupts.exit_code)

    try:
        try:
            _start_and_run(space, ssh, interrupts, children, stuck, side)
        finally:
            interrupts.tearing_down()
    finally:
        teardown.run()
        for child in children:
            child.poll()  # reap what the teardown ended
    return interrupts.exit_code


class OneTeardown:
    """The teardown, run once: by the demo's own end, or by the watch of a stuck console."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._done = False

    def run(self) -> None:
        """Run it, or wait for the run under way to end."""
        with self._lock:
            if not self._done:
                self._done = True
                self._work()


def _leave_the_terminal() -> None:
    """Put a terminal the stuck console held back as far as can be done from outside it."""
    with contextlib.suppress(OSError):
        os.write(sys.stdout.fileno(), b"\x1b[?1049l\x1b[?25h\r\n")


def _start_and_run(
    space: Workspace, ssh: bool, interrupts: DemoInterrupts, children: list[subprocess.Popen[bytes]],
    stuck: Callable[[], None], side: SideLinks,
) -> None:  # fmt: skip
    say(f"eagle-console demo: building the workspace in {space.root} ...")
    build_workspace(space)
    access = None
    if ssh:
        access = start_ssh_server(space, children)
        say(
            f"a real SSH server listens on 127.0.0.1:{access.port}; its key is pinned in {access.known_hosts}"
        )
    host = write_demo_config(space, free_port(), access, drafter_port=free_port())
    opener = _opener(host)
    say(
        f"the config for this host is {space.config} (its first lines list headless commands "
        "to try); starting the agent, the server and 8 runs ..."
    )
    asyncio.run(start_pipeline(opener, host, nonce=secrets.token_hex(4)))
    side.use(opener)
    _run_console(opener, host, interrupts, space.stale_capture, stuck, side.open)


def _opener(host: HostConfig) -> Opener:
    """As a headless command opens it, but an SSH box also gets the simulator the jobs run."""

    async def opener() -> AgentLink:
        return await open_host_link(host, demo_bundle())

    return opener


async def start_pipeline(opener: Opener, host: HostConfig, nonce: str) -> None:
    """The server, then (once it answers) one run per dataset, then the autopilot.

    With no key pressed, the box takes it from there to the drafter's verdict.
    """
    link = await opener()
    try:
        # the demo wrote this config: an agent left in a reused --dir keeps its old one
        await link.apply_pipeline(host.pipeline)
        await launch_server(link, nonce)
        url = host.pipeline.sglang_url or ""
        await wait_for_health(url, Path(host.pipeline.sglang_log or ""))
        await launch_runs(link, nonce)
        await start_autopilot(link, nonce)
    finally:
        await link.close()


def _run_console(
    opener: Opener, host: HostConfig, interrupts: DemoInterrupts, stale: Path,
    stuck: Callable[[], None], side_opener: Opener,
) -> None:  # fmt: skip
    from console.ui.app import ConsoleApp

    app = ConsoleApp({"demo": opener}, host_configs={"demo": host}, log_path=console_log_path())

    def exit_soon() -> None:  # called from a signal handler: only schedule
        asyncio.get_running_loop().call_soon_threadsafe(app.exit)

    def tell(line: str) -> None:
        with contextlib.suppress(RuntimeError):  # the app may be gone already
            app.call_from_thread(app.notify, line, severity="warning", timeout=15)

    chaos = threading.Thread(
        target=asyncio.run, args=(misbehave(side_opener, tell),), name="demo mishaps", daemon=True
    )
    chaos.start()
    room = threading.Thread(
        target=asyncio.run, args=(refuse_then_make_room(side_opener, stale, tell),),
        name="demo refusal", daemon=True,
    )  # fmt: skip
    room.start()
    with interrupts.console(exit_soon, stuck):
        app.run()


def _tear_down(space: Workspace, keep: bool, interrupts: DemoInterrupts) -> None:
    """End every process the demo started (its runs are cancelled, not drained), then the files."""
    say("stopping the demo's processes (its runs are cancelled: the demo's data is disposable) ...")
    left = end_demo_processes(space, interrupts.hurry)
    if interrupts.hurry.is_set():
        say("a signal cut the teardown short: what was left was killed at once; finishing")
    if left:
        say(f"could not end the demo's processes {[p.pid for p in left]}; see {space.root}")
    if keep:
        say(f"workspace kept in {space.root}")
    else:
        shutil.rmtree(space.root, ignore_errors=True)
    say("the demo has stopped everything it started")


def say(line: str) -> None:
    """One line of the demo's own narration, before and after the console (if a terminal is left)."""
    with contextlib.suppress(OSError):
        print(line, flush=True)  # noqa: T201
