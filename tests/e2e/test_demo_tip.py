"""Every headless command the plain demo's config prints works as printed while the demo runs.

The config said "Try: eagle-console --config THIS_FILE status demo", and in the plain demo every
headless command failed with "cannot reach localhost:22".
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
import tomllib

from tests.support.demo_terminal import CONSOLE_UP, START_TIMEOUT_S, start_demo
from tests.support.json_http import health_ok
from tests.support.waits import wait_until_blocking

TIP = "#   "
CONFIG = "eagle-console.toml"
COMMAND_TIMEOUT_S = 180
SERVER_BACK_S = 120.0
"""The demo's server restarts within seconds of its kill; this bounds the wait for it."""


def tip_commands(config: Path) -> list[list[str]]:
    """The commands the config's header suggests, word for word as printed."""
    lines = [line for line in config.read_text().splitlines() if line.startswith(TIP)]
    return [shlex.split(line[len(TIP) :]) for line in lines]


def path_without_the_venv() -> str:
    """PATH as a shell has it after `make demo`: the venv is not activated."""
    venv_bin = str(Path(sys.executable).parent)
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """As another terminal's shell runs it (the PATH of the test, without the venv)."""
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False,
        env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip


def doctor_with_the_server_up(argv: list[str], config: Path) -> subprocess.CompletedProcess[str]:
    """doctor, asked again once the demo's server is back: the demo kills it at 55 s to show a
    restart, and a doctor run in those seconds rightly says so. Each doctor run loads the
    tokenizer on the box: the server's own /health says when it is back, for a fraction of that."""
    deadline = time.monotonic() + SERVER_BACK_S
    result = run(argv)
    while re.search(r"^FAIL sglang ", result.stdout, re.M) and time.monotonic() < deadline:
        wait_for_health(server_url(config), deadline)
        result = run(argv)
    return result


def server_url(config: Path) -> str:
    """The demo host's SGLang URL, as its config names it."""
    url: str = tomllib.loads(config.read_text())["hosts"]["demo"]["sglang"]["url"]
    return url


def wait_for_health(url: str, deadline: float) -> None:
    """Until the server answers /health with 200, or `deadline` (monotonic) has passed."""
    wait_until_blocking(lambda: health_ok(url, 5), deadline - time.monotonic(), 0.5)


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_every_command_of_the_demo_tip_works_as_printed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_the_venv())  # "command not found" before
    with closing(start_demo(workspace)) as terminal:
        terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
        commands = tip_commands(workspace / CONFIG)
        names = [argv[3] for argv in commands]
        assert names == ["status", "jobs", "autopilot", "report", "doctor", "events", "deploy",
                         "apply", "redeploy"]  # fmt: skip
        for argv in commands:
            doctor = argv[3] == "doctor"
            result = doctor_with_the_server_up(argv, workspace / CONFIG) if doctor else run(argv)
            said = f"{shlex.join(argv[1:])}:\n{result.stdout}\n{result.stderr}"
            assert "cannot reach" not in said
            assert "Traceback" not in said
            assert result.returncode == 0, said  # doctor too: the demo's GPUs are its stand-in's
            if argv[3] == "doctor":
                assert re.search(r"^ok +gpus +2 GPU\(s\)", result.stdout, re.M), said
        terminal.send(b"q")
        assert terminal.wait_exit(60) == 0
