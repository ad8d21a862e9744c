"""doctor and report: the headless commands a script or a hand-off uses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.simulator_process import running_simulator
from tests.support.ssh_servers import SshEndpoint


def config_with_sglang(
    tmp_path: Path, endpoint: SshEndpoint, state_dir: Path, root: Path, url: str
) -> Path:
    path = tmp_path / "eagle-console.toml"
    body = endpoint.config_toml(
        "gpu", python=sys.executable, state_dir=state_dir, datasets_root=root
    )
    path.write_text(body + f'[hosts.gpu.sglang]\nurl = "{url}"\n')
    return path


@pytest.mark.slow
async def test_doctor_checks_every_precondition(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    with running_simulator(tmp_path / "sim", "--model-path", "org/target") as sim:
        config = config_with_sglang(tmp_path, asyncssh_endpoint, state_dir, sample_root, sim.url)
        result = await run_cli("doctor", "gpu", config=config)
    lines = {line.split()[1]: line for line in result.stdout.splitlines() if line.strip()}
    for name in ("ssh", "python", "aiohttp", "agent", "datasets", "sglang"):
        assert lines[name].startswith("ok"), result.stdout
    assert "3 dataset(s)" in lines["datasets"]
    assert "model org/target" in lines["sglang"]
    assert lines["gpus"].startswith("ok"), result.stdout  # no job here has gpu = true
    assert "GPU(s)" in lines["gpus"] or "no configured job has gpu = true" in lines["gpus"]
    assert lines["webhook"].startswith("ok"), result.stdout
    assert "none configured" in lines["webhook"]
    assert result.code == 0, result.stdout


async def test_doctor_names_the_first_broken_thing(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    config = config_with_sglang(
        tmp_path, asyncssh_endpoint, state_dir, tmp_path / "nowhere", "http://127.0.0.1:1"
    )
    result = await run_cli("doctor", "gpu", config=config)
    assert result.code == 1
    assert "does not exist" in result.stdout
    assert "unreachable" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


async def test_report_is_markdown_with_the_numbers(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, sample_root: Path
) -> None:
    config = config_with_sglang(
        tmp_path, asyncssh_endpoint, state_dir, sample_root, "http://127.0.0.1:1"
    )
    result = await run_cli_ok("report", "gpu", config=config)
    assert result.stdout.startswith("# Run report: gpu")
    assert "| B1_sharegpt | 3 / 5 | 60 / 1K |" in result.stdout
    assert "## Alerts" in result.stdout
