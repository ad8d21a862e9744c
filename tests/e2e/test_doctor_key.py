"""`doctor` fails a key the server refuses, naming its file, where it said `ok`.

The server ran with `--api-key right-key` and `~/.sglang-key` held a wrong one: doctor printed
`ok sglang … HTTP 401: set api_key_file` (it was set; the key was wrong). The real command, a
local agent, the simulator with --api-key.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.state import StatePaths
from tests.support.cli_runs import run_cli
from tests.support.leftover_jobs import kill_leftover_jobs
from tests.support.simulator_process import SimulatorProcess, running_simulator


@pytest.fixture
def server(tmp_path: Path) -> Iterator[SimulatorProcess]:
    with running_simulator(tmp_path / "sim", "--api-key", "right-key") as sim:
        yield sim


@pytest.fixture
def states(tmp_path: Path) -> Iterator[list[Path]]:
    """The state folders of the agents a test starts; each daemon is stopped after it."""
    folders: list[Path] = []
    yield folders
    for folder in folders:
        if folder.exists():
            stop_daemon(StatePaths(folder))
            kill_leftover_jobs(folder)


def config(tmp_path: Path, name: str, url: str, states: list[Path], key: str | None) -> Path:
    """A local host whose [sglang] is `url`, with `key` in its key file (no key file if None)."""
    state = tmp_path / f"state-{name}"
    states.append(state)
    lines = ["[hosts.box]", 'ssh = "local"', f"python = {json.dumps(sys.executable)}",
             f"state_dir = {json.dumps(str(state))}", "", "[hosts.box.sglang]",
             f"url = {json.dumps(url)}"]  # fmt: skip
    if key is not None:
        key_file = tmp_path / f"{name}.key"
        key_file.write_text(key + "\n")
        lines.append(f"api_key_file = {json.dumps(str(key_file))}")
    path = tmp_path / f"{name}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def sglang_line(path: Path) -> tuple[int, str]:
    result = await run_cli("doctor", "box", config=path)
    [line] = [line for line in result.stdout.splitlines() if line[5:].startswith("sglang")]
    return result.code, line


async def test_doctor_fails_a_refused_key_and_names_its_file(
    tmp_path: Path, server: SimulatorProcess, states: list[Path]
) -> None:
    code, line = await sglang_line(config(tmp_path, "wrong", server.url, states, "wrong-key"))
    assert code == 1
    assert line.startswith("FAIL sglang")
    assert (
        f"key refused: the key in {tmp_path / 'wrong.key'} was refused by the server "
        "(/server_info answered HTTP 401): check the key; it must be the server's --api-key"
    ) in line
    assert "set api_key_file" not in line


async def test_doctor_says_to_set_api_key_file_where_none_is_set(
    tmp_path: Path, server: SimulatorProcess, states: list[Path]
) -> None:
    code, line = await sglang_line(config(tmp_path, "none", server.url, states, None))
    assert code == 1
    assert line.startswith("FAIL sglang")
    assert "the server wants an API key: set api_key_file under [hosts.NAME.sglang]" in line


async def test_doctor_passes_the_right_key(
    tmp_path: Path, server: SimulatorProcess, states: list[Path]
) -> None:
    _, line = await sglang_line(config(tmp_path, "right", server.url, states, "right-key"))
    assert line.startswith("ok   sglang"), line
