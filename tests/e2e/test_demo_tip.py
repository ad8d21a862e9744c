"""Every headless command the plain demo's config prints works as printed while the demo runs.

The config said "Try: eagle-console --config THIS_FILE status demo", and in the plain demo every
headless command failed with "cannot reach localhost:22".
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo_terminal import CONSOLE_UP, START_TIMEOUT_S, kill_leftovers, start_demo

TIP = "#   eagle-console "
COMMAND_TIMEOUT_S = 180


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "demo"
    yield folder
    kill_leftovers(folder)
    shutil.rmtree(folder, ignore_errors=True)


def tip_commands(config: Path) -> list[list[str]]:
    """The commands the config's header suggests, each as an argv for this venv's eagle-console."""
    console = str(Path(sys.executable).parent / "eagle-console")
    lines = [line for line in config.read_text().splitlines() if line.startswith(TIP)]
    return [[console, *shlex.split(line[len(TIP) :])] for line in lines]


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False,
        env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip


@pytest.mark.timeout(600)
@pytest.mark.slow
def test_every_command_of_the_demo_tip_works_as_printed(workspace: Path) -> None:
    terminal = start_demo(workspace)
    try:
        terminal.wait_for(CONSOLE_UP, START_TIMEOUT_S)
        commands = tip_commands(workspace / "eagle-console.toml")
        names = [argv[3] for argv in commands]
        assert names == ["status", "report", "doctor", "events", "deploy", "redeploy"]
        for argv in commands:
            result = run(argv)
            said = f"{shlex.join(argv[1:])}:\n{result.stdout}\n{result.stderr}"
            assert "cannot reach" not in said
            assert "Traceback" not in said
            if argv[3] == "doctor":  # no GPU and no nvidia-smi here: that line alone may fail
                failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
                assert all(" gpus " in line for line in failed), said
            else:
                assert result.returncode == 0, said
        terminal.send(b"q")
        assert terminal.wait_exit(60) == 0
    finally:
        terminal.close()
