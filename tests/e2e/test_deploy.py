"""deploy over SSH: drift by sha256, a diff, an atomic swap with backup, rollback, and refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.ssh_servers import SshEndpoint


def setup(
    tmp_path: Path, endpoint: SshEndpoint, state_dir: Path, remote: str | None = None
) -> tuple[Path, Path, Path]:
    local = tmp_path / "eagle3-train"
    (local / "datasets").mkdir(parents=True)
    (local / "datasets" / "run_inference.py").write_text("print('old runner')\n")
    (local / "datasets" / "run_inference.py").chmod(0o750)
    (local / "README.md").write_text("notes\n")
    root = tmp_path / "remote-root"
    root.mkdir()
    config = tmp_path / "eagle-console.toml"
    body = endpoint.config_toml(
        "gpu", python=sys.executable, state_dir=state_dir, datasets_root=tmp_path
    )
    body = body.replace("[hosts.gpu.datasets]", f'deploy_roots = ["{root}"]\n[hosts.gpu.datasets]')
    config.write_text(
        body
        + f'[[hosts.gpu.deploy]]\nlocal = "eagle3-train"\nremote = "{remote or root / "eagle3-train"}"\n'
    )
    return config, local, root / "eagle3-train"


@pytest.mark.slow
async def test_deploy_shows_drift_swaps_atomically_and_rolls_back(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    config, local, remote = setup(tmp_path, asyncssh_endpoint, state_dir)

    dry = await run_cli_ok("deploy", "gpu", "--dry-run", config=config)
    assert dry.stdout.count("new") >= 2
    assert not remote.exists(), "a dry run changes nothing"

    await run_cli_ok("deploy", "gpu", config=config)
    script = remote / "datasets" / "run_inference.py"
    assert script.read_text() == "print('old runner')\n"
    assert script.stat().st_mode & 0o777 == 0o750
    assert "unchanged" in (await run_cli("deploy", "gpu", "--dry-run", config=config)).stdout

    (local / "datasets" / "run_inference.py").write_text("print('fixed runner')\n")
    drift = await run_cli("deploy", "gpu", "--dry-run", config=config)
    assert "changed" in drift.stdout
    assert "-print('old runner')" in drift.stdout
    assert "+print('fixed runner')" in drift.stdout

    await run_cli_ok("deploy", "gpu", config=config)
    assert script.read_text() == "print('fixed runner')\n"
    assert (script.parent / "run_inference.py.eagle-backup").read_text() == "print('old runner')\n"
    assert not list(script.parent.glob(".*eagle-upload*"))

    await run_cli_ok("deploy", "gpu", "--rollback", str(script), config=config)
    assert script.read_text() == "print('old runner')\n"


async def test_targets_outside_the_deploy_roots_are_refused(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    outside = tmp_path / "elsewhere"
    config, _, _ = setup(tmp_path, asyncssh_endpoint, state_dir, remote=str(outside))
    result = await run_cli("deploy", "gpu", config=config)
    assert result.code == 1
    assert "outside the deploy roots" in result.stderr
    assert "Traceback" not in result.stderr
    assert not outside.exists()
