"""The agent that answers over SSH is the bundle this console uploaded, never other code.

The bundle leaves the simulator out; only the demo's box gets it, as a payload hashed apart.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.config import HostConfig, SshTarget
from console.link.bundle import demo_bundle, local_bundle
from console.link.ssh_link import open_ssh_link
from tests.support.operations import closed_after
from tests.support.ssh_servers import SshEndpoint


async def test_an_agent_package_in_the_remote_working_dir_does_not_shadow_the_bundle(
    tmp_path: Path, state_dir: Path, asyncssh_endpoint: SshEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loopback server runs commands in its own working dir, as sshd runs them in $HOME:
    # a folder there called `agent` must not be what `python -m agent attach` imports.
    decoy = tmp_path / "home" / "agent"
    decoy.mkdir(parents=True)
    canary = tmp_path / "decoy-ran"
    (decoy / "__init__.py").write_text("")
    (decoy / "__main__.py").write_text(f"open({str(canary)!r}, 'w').close()\n")
    monkeypatch.chdir(decoy.parent)
    host = _host(tmp_path, state_dir, asyncssh_endpoint)
    async with closed_after(await open_ssh_link(host)) as link:
        assert link.hello_result is not None
    assert not canary.exists()


async def test_a_box_gets_the_bundle_without_the_simulator(
    tmp_path: Path, state_dir: Path, asyncssh_endpoint: SshEndpoint
) -> None:
    link = await open_ssh_link(_host(tmp_path, state_dir, asyncssh_endpoint))
    await link.close()

    [folder] = (state_dir / "bundles").iterdir()
    assert folder.name == local_bundle().sha256
    assert (folder / "agent" / "attach.py").is_file()
    assert not (folder / "agent" / "simulator").exists()


async def test_the_demo_box_gets_the_simulator_with_the_same_bundle_digest(
    tmp_path: Path, state_dir: Path, asyncssh_endpoint: SshEndpoint
) -> None:
    host = _host(tmp_path, state_dir, asyncssh_endpoint)
    async with closed_after(await open_ssh_link(host, demo_bundle())) as link:
        assert link.hello_result is not None
        assert link.hello_result.bundle_sha256 == local_bundle().sha256

    [folder] = (state_dir / "bundles").iterdir()
    assert folder.name == demo_bundle().folder != local_bundle().folder
    found = subprocess.run(  # as the demo's jobs run it: from the folder, on its PYTHONPATH
        [sys.executable, "-c", "import agent.simulator.server as s; print(s.__file__)"],
        cwd=folder, env=dict(os.environ, PYTHONPATH=str(folder)), capture_output=True, text=True,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(folder)


def _host(tmp_path: Path, state_dir: Path, endpoint: SshEndpoint) -> HostConfig:
    (tmp_path / "no-ssh-config").write_text("")
    return HostConfig(
        "gpu", SshTarget(endpoint.host, endpoint.user, endpoint.port), python=sys.executable,
        state_dir=str(state_dir), known_hosts=str(endpoint.known_hosts),
        identity=str(endpoint.identity), ssh_config=str(tmp_path / "no-ssh-config"),
    )  # fmt: skip
