"""The agent that answers over SSH is the bundle this console uploaded, never other code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from console.config import HostConfig, SshTarget
from console.link.ssh_link import open_ssh_link
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
    endpoint = asyncssh_endpoint
    host = HostConfig(
        "gpu", SshTarget(endpoint.host, endpoint.user, endpoint.port), python=sys.executable,
        state_dir=str(state_dir), known_hosts=str(endpoint.known_hosts),
        identity=str(endpoint.identity), ssh_config=str(tmp_path / "no-ssh-config"),
    )  # fmt: skip
    (tmp_path / "no-ssh-config").write_text("")
    link = await open_ssh_link(host)
    try:
        assert link.hello_result is not None
    finally:
        await link.close()
    assert not canary.exists()
