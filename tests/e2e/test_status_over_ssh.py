"""`eagle-console status` end to end: the real CLI, a real SSH server, the real agent."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.datasets import write_sample_root
from tests.support.ssh_servers import SshEndpoint

CLI_TIMEOUT_S = 180
"""A bound, not an expectation: doctor imports transformers on the host, slow beside 5 busy workers."""


@dataclass(frozen=True)
class CliResult:
    """What one eagle-console run printed and returned."""

    code: int
    stdout: str
    stderr: str


async def run_cli(*args: str, config: Path, stdin: bytes = b"") -> CliResult:
    """Run `python -m console --config CONFIG ARGS...` as a user would, without a terminal."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console", "--config", str(config), *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), CLI_TIMEOUT_S)
    except TimeoutError:  # ended here, so its pipes and sockets do not leak into the next test
        process.kill()
        await process.wait()
        raise AssertionError(f"eagle-console {' '.join(args)} ran past {CLI_TIMEOUT_S} s") from None
    assert process.returncode is not None
    return CliResult(process.returncode, out.decode(), err.decode())


def write_config(
    tmp_path: Path, endpoint: SshEndpoint, state_dir: Path, root: Path, **overrides: str
) -> Path:
    """An eagle-console.toml with one host, `gpu`, reached through `endpoint`."""
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        endpoint.config_toml(
            "gpu",
            state_dir=state_dir,
            datasets_root=root,
            **({"python": sys.executable} | overrides),
        )
    )
    return config


async def test_status_json_counts_datasets_over_ssh(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    expected = write_sample_root(root)
    config = write_config(tmp_path, ssh_endpoint, state_dir, root)

    result = await run_cli("status", "--json", "gpu", config=config)

    assert result.code == 0, result.stderr
    [report] = [json.loads(line) for line in result.stdout.splitlines()]
    assert report["host"] == "gpu"
    assert report["link"] == "up"
    got = {d["name"]: (d["prompts"], d["responses"], d["tokens"]) for d in report["datasets"]}
    assert got == {name: (e.prompts, e.responses, e.tokens) for name, e in expected.items()}
    assert {d["budget"] for d in report["datasets"]} == {1000}


async def test_second_status_reuses_the_uploaded_bundle_and_daemon(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_sample_root(root)
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root)

    first = await run_cli("status", "--json", config=config)
    daemon_before = json.loads((state_dir / "daemon.json").read_text())["pid"]
    second = await run_cli("status", "--json", config=config)

    assert (first.code, second.code) == (0, 0)
    assert len(list((state_dir / "bundles").iterdir())) == 1
    assert json.loads((state_dir / "daemon.json").read_text())["pid"] == daemon_before
    assert oct((state_dir).stat().st_mode & 0o777) == oct(0o700)


async def test_status_table_for_people(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    write_sample_root(root)
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root)

    result = await run_cli("status", config=config)

    assert result.code == 0, result.stderr
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

    result = await run_cli("status", "--json", "gpu", config=config)

    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    assert {d["name"]: d["tokens"] for d in report["datasets"]} == {
        n: e.tokens for n, e in expected.items()
    }
    assert json.loads((state_dir / "daemon.json").read_text())["python"] == python_310()
