"""`eagle-console status` end to end: the real CLI, a real SSH server, the real agent."""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli, write_config
from tests.support.cli_success import run_cli_ok
from tests.support.datasets import write_sample_root
from tests.support.ssh_servers import SshEndpoint


async def test_status_json_counts_datasets_over_ssh(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    expected = write_sample_root(root)
    config = write_config(tmp_path, ssh_endpoint, state_dir, root)

    result = await run_cli_ok("status", "--json", "gpu", config=config)

    [report] = [json.loads(line) for line in result.stdout.splitlines()]
    assert report["host"] == "gpu"
    assert report["link"] == "up"
    got = {d["name"]: (d["prompts"], d["responses"], d["tokens"]) for d in report["datasets"]}
    assert got == {name: (e.prompts, e.responses, e.tokens) for name, e in expected.items()}
    assert {d["budget"] for d in report["datasets"]} == {1000}


async def test_second_status_reuses_the_uploaded_bundle_and_daemon(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, sample_root)

    first = await run_cli("status", "--json", config=config)
    daemon_before = json.loads((state_dir / "daemon.json").read_text())["pid"]
    second = await run_cli("status", "--json", config=config)

    assert (first.code, second.code) == (0, 0)
    assert len(list((state_dir / "bundles").iterdir())) == 1
    assert json.loads((state_dir / "daemon.json").read_text())["pid"] == daemon_before
    assert oct((state_dir).stat().st_mode & 0o777) == oct(0o700)


async def test_status_table_for_people(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, sample_root)

    result = await run_cli_ok("status", config=config)

    row = next(line for line in result.stdout.splitlines() if "B1_sharegpt" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    assert cells == ["B1_sharegpt", "3", "5", "60", "1,000", "idle"]


def python_310() -> str | None:
    """A Python 3.10 interpreter, the oldest the agent supports, if this machine has one."""
    candidates = [
        shutil.which("python3.10"),
        *glob.glob("/root/.pyenv/versions/3.10*/bin/python3.10"),
    ]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 10)":
            return candidate
    return None


@pytest.mark.skipif(python_310() is None, reason="no Python 3.10 on this machine")
async def test_the_agent_runs_on_the_oldest_supported_python(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    expected = write_sample_root(root)
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, python=str(python_310()))

    result = await run_cli_ok("status", "--json", "gpu", config=config)

    report = json.loads(result.stdout)
    assert {d["name"]: d["tokens"] for d in report["datasets"]} == {
        n: e.tokens for n, e in expected.items()
    }
    assert json.loads((state_dir / "daemon.json").read_text())["python"] == python_310()
