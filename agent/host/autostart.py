"""Starting the agent when the box boots, without a console: an @reboot line in the crontab.

After a reboot every process is gone and only the state folder is left; an agent started at
boot marks the jobs it finds gone as lost and its restart policies take the run up again. The
line runs `python -m agent start` from `<state>/agent-code`, a link the daemon points at its
own code each time it starts, so the line stays right across upgrades. Where the box has no
cron (many containers), the same command goes in the container's entrypoint. The crontab is
read and written with `crontab -l` / `crontab -` as argv lists, never through a shell; only
the one line marked as ours is ever added or removed.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.bundle import AGENT_PACKAGE
from agent.errors import AgentError
from agent.protocol import (
    AutostartParams,
    AutostartStatus,
    AutostartStatusParams,
    ErrorCode,
    Request,
)

MARK = "# eagle-console agent"
CODE_LINK = "agent-code"
TIMEOUT_S = 10.0


class AutostartError(Exception):
    """The crontab could not be read or written; the message says why and what to do."""


def point_code_link(state_dir: Path) -> None:
    """Point `<state>/agent-code` at the code this daemon runs (atomically)."""
    link = state_dir / CODE_LINK
    temp = state_dir / f".{CODE_LINK}.{os.getpid()}"
    temp.unlink(missing_ok=True)
    os.symlink(AGENT_PACKAGE.parent, temp)
    os.replace(temp, link)


def boot_command(state_dir: Path, python: str = sys.executable) -> str:
    """The shell command that starts this agent (for cron, or a container's entrypoint)."""
    code = shlex.quote(str(state_dir / CODE_LINK))
    return (
        f"cd {code} && env PYTHONPATH={code} {shlex.quote(python)} -m agent start "
        f"--state-dir {shlex.quote(str(state_dir))}"
    )


def cron_line(state_dir: Path) -> str:
    """The crontab line that runs `boot_command` at every boot.

    cron reads an unescaped `%` in a command as a newline (crontab(5)): a state folder with a `%`
    in its name broke the line, so each is escaped.
    """
    line = f"{boot_command(state_dir)} >/dev/null 2>&1 {MARK} {state_dir}"
    return "@reboot " + line.replace("%", "\\%")


def status(state_dir: Path) -> AutostartStatus:
    """Whether the line is in this user's crontab (blocking: call from a thread)."""
    line, command = cron_line(state_dir), boot_command(state_dir)
    if shutil.which("crontab") is None:
        detail = (
            "no crontab on this box: the agent starts when a console connects; to start it at "
            f"boot, run this from the container's entrypoint: {command}"
        )
        return AutostartStatus(False, line, command, False, detail)
    try:
        ours = [entry for entry in _read() if _is_ours(entry, state_dir)]
    except AutostartError as exc:
        return AutostartStatus(False, line, command, True, str(exc))
    if line in ours:
        detail = "installed: cron starts the agent at boot (if cron runs in this container)"
        return AutostartStatus(True, line, command, True, detail)
    if ours:
        return AutostartStatus(
            False, line, command, True, "an older line is installed; install again"
        )
    detail = "not installed: the agent starts when a console connects; `eagle-console autostart HOST --install` adds the @reboot line"
    return AutostartStatus(False, line, command, True, detail)


def install(state_dir: Path) -> AutostartStatus:
    """Add (or replace) our @reboot line; every other line is kept as it was."""
    _write([e for e in _read() if not _is_ours(e, state_dir)] + [cron_line(state_dir)])
    return status(state_dir)


def remove(state_dir: Path) -> AutostartStatus:
    """Remove our @reboot line, and only it."""
    _write([entry for entry in _read() if not _is_ours(entry, state_dir)])
    return status(state_dir)


def _is_ours(entry: str, state_dir: Path) -> bool:
    return entry.rstrip().endswith(f"{MARK} {state_dir}".replace("%", "\\%"))


def _read() -> list[str]:
    done = _crontab(["-l"], None)
    if done.returncode != 0:
        if "no crontab" in done.stderr.lower():
            return []
        raise AutostartError(f"crontab -l failed: {done.stderr.strip() or done.returncode}")
    return done.stdout.splitlines()


def _write(lines: list[str]) -> None:
    done = _crontab(["-"], "".join(f"{line}\n" for line in lines))
    if done.returncode != 0:
        raise AutostartError(f"crontab - failed: {done.stderr.strip() or done.returncode}")


def _crontab(args: list[str], text: str | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["crontab", *args], input=text if text is not None else "", capture_output=True,
            text=True, timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AutostartError(f"crontab {' '.join(args)}: {exc}") from None


def handle_status(
    state_dir: Path,
) -> Callable[[Request[AutostartStatusParams]], Awaitable[AutostartStatus]]:
    """The autostart.status handler for this state folder."""

    async def handle(request: Request[AutostartStatusParams]) -> AutostartStatus:
        return await asyncio.to_thread(status, state_dir)

    return handle


def handle_set(state_dir: Path) -> Callable[[Request[AutostartParams]], Awaitable[AutostartStatus]]:
    """The autostart.set handler: install or remove the line, or say why it cannot."""

    async def handle(request: Request[AutostartParams]) -> AutostartStatus:
        change = install if request.params.action == "install" else remove
        if shutil.which("crontab") is None:
            raise AgentError(
                ErrorCode.UNAVAILABLE, (await asyncio.to_thread(status, state_dir)).detail
            )
        try:
            return await asyncio.to_thread(change, state_dir)
        except AutostartError as exc:
            raise AgentError(ErrorCode.UNAVAILABLE, str(exc)) from None

    return handle
