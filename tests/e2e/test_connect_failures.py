"""Every way a connection can fail gives one clear line, a non-zero exit and no traceback."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from console.link.loopback_ssh import write_client_key
from tests.support.cli_runs import CliResult, run_cli, write_config
from tests.support.cli_success import run_cli_ok
from tests.support.ssh_servers import SshEndpoint


def assert_one_clear_failure(result: CliResult, *fragments: str, code: int = 1) -> None:
    assert result.code == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


async def status_fails_clearly(
    config: Path, *fragments: str, code: int = 1, json: bool = False
) -> CliResult:
    """`status gpu` (`--json` if asked) on `config` fails as `assert_one_clear_failure` asks."""
    result = await run_cli("status", *(["--json"] if json else []), "gpu", config=config)
    assert_one_clear_failure(result, *fragments, code=code)
    return result


@pytest.fixture
def root(sample_root: Path) -> Path:
    """The sample datasets, by the short name that keeps each `write_config` call on one line."""
    return sample_root


async def test_unknown_host_key_is_refused_with_its_fingerprint(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    config = write_config(tmp_path, ssh_endpoint, state_dir, root, known_hosts=str(empty))

    await status_fails_clearly(
        config, "unknown host key", ssh_endpoint.host_key_fingerprint, "eagle-console trust gpu"
    )
    assert not state_dir.exists(), "nothing may run on a host whose key is not trusted"


async def test_changed_host_key_is_refused_loudly_naming_both_keys(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    impostor = asyncssh.generate_private_key("ssh-ed25519")
    pinned = tmp_path / "pinned_known_hosts"
    algorithm, blob = impostor.export_public_key().decode().split()[:2]
    pinned.write_text(f"[127.0.0.1]:{asyncssh_endpoint.port} {algorithm} {blob}\n")
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, known_hosts=str(pinned))

    result = await status_fails_clearly(
        config,
        "HOST KEY CHANGED",
        asyncssh_endpoint.host_key_fingerprint,
        impostor.get_fingerprint("sha256"),
    )
    trust = await run_cli("trust", "gpu", "--yes", config=config)
    assert_one_clear_failure(trust, "HOST KEY CHANGED")
    assert pinned.read_text().count("\n") == 1, "a changed key is never replaced"
    assert result.stderr.count(impostor.get_fingerprint("sha256")) == 1


async def test_a_revoked_host_key_is_refused_as_revoked_and_cannot_be_pinned(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    known = tmp_path / "known_hosts"
    real = asyncssh_endpoint.known_hosts.read_text().split()
    known.write_text(f"@revoked {' '.join(real)}\n")
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, known_hosts=str(known))

    await status_fails_clearly(config, "REVOKED host key", asyncssh_endpoint.host_key_fingerprint)
    trust = await run_cli("trust", "gpu", "--yes", config=config)
    assert_one_clear_failure(trust, "REVOKED host key")
    assert known.read_text().count("\n") == 1
    known.write_text(f"{known.read_text()}{' '.join(real)}\n")  # pinned by hand, and revoked
    await status_fails_clearly(config, "REVOKED host key")
    assert not state_dir.exists(), "nothing may run on a host whose key is revoked"


async def test_ssh_config_cannot_turn_host_key_checking_off(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path,
    isolated_home: Path,
) -> None:  # fmt: skip
    ssh_dir = isolated_home / ".ssh"
    ssh_dir.mkdir(mode=0o700)
    (ssh_dir / "config").write_text("Host *\n  UserKnownHostsFile none\n  ForwardAgent yes\n")
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, known_hosts="")

    await status_fails_clearly(config, "unknown host key", asyncssh_endpoint.host_key_fingerprint)


async def test_trust_pins_only_on_a_typed_yes(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    known = tmp_path / "fresh_known_hosts"
    config = write_config(tmp_path, ssh_endpoint, state_dir, root, known_hosts=str(known))

    declined = await run_cli("trust", "gpu", config=config, stdin=b"y\n")
    assert declined.code == 1
    assert ssh_endpoint.host_key_fingerprint in declined.stdout
    assert not known.exists()

    await run_cli_ok("trust", "gpu", config=config, stdin=b"yes\n")
    await run_cli_ok("status", "--json", "gpu", config=config)


async def test_a_host_given_by_name_is_refused_then_pinned_without_a_traceback(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    known = tmp_path / "fresh_known_hosts"
    by_name = f"{asyncssh_endpoint.user}@localhost:{asyncssh_endpoint.port}"
    config = write_config(
        tmp_path, asyncssh_endpoint, state_dir, root, known_hosts=str(known), ssh=by_name
    )
    await status_fails_clearly(config, "unknown host key", asyncssh_endpoint.host_key_fingerprint)
    await run_cli_ok("trust", "gpu", config=config, stdin=b"yes\n")
    assert known.read_text().startswith(f"[localhost]:{asyncssh_endpoint.port} ")
    await run_cli_ok("status", "--json", "gpu", config=config)


@pytest.mark.parametrize("alias_line", ["", "HostKeyAlias gpu-box-key"])
async def test_a_host_given_by_an_ssh_config_alias_is_pinned_under_the_name_it_is_looked_up_by(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path, alias_line: str
) -> None:
    known = tmp_path / "fresh_known_hosts"
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(
        f"Host gpubox\n  HostName {ssh_endpoint.host}\n  Port {ssh_endpoint.port}\n"
        f"  User {ssh_endpoint.user}\n  {alias_line}\n"
    )
    config = write_config(
        tmp_path, ssh_endpoint, state_dir, root, known_hosts=str(known), ssh="gpubox",
        ssh_config=str(ssh_config),
    )  # fmt: skip
    name = "gpu-box-key" if alias_line else ssh_endpoint.host  # asyncssh keeps the port either way
    looked_up_as = f"[{name}]:{ssh_endpoint.port}"
    await status_fails_clearly(config, "unknown host key", f"known_hosts names it {looked_up_as}")
    await run_cli_ok("trust", "gpu", config=config, stdin=b"yes\n")
    assert known.read_text().startswith(f"{looked_up_as} ")  # not `gpubox`: never looked up
    await run_cli_ok("status", "--json", "gpu", config=config)
    await run_cli_ok("trust", "gpu", "--yes", config=config)


async def test_failed_authentication(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    stranger = tmp_path / "stranger_key"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(stranger))
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, identity=str(stranger))

    await status_fails_clearly(config, "authentication failed", "hosts.gpu.identity")


async def test_unreachable_host(tmp_path: Path, state_dir: Path, root: Path) -> None:
    identity, _ = write_client_key(tmp_path)
    closed = SshEndpoint("127.0.0.1", 1, "nobody", identity, tmp_path / "kh", "")
    config = write_config(tmp_path, closed, state_dir, root)

    await status_fails_clearly(config, "cannot reach", "127.0.0.1:1")


async def test_missing_python_on_the_host(
    ssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    config = write_config(tmp_path, ssh_endpoint, state_dir, root, python="/no/such/python3")

    await status_fails_clearly(config, "cannot run Python '/no/such/python3'", "hosts.gpu.python")


async def test_too_old_python_on_the_host(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    old = tmp_path / "python3.8"
    old.write_text('#!/bin/sh\necho \'{"version": [3, 8, 10], "home": "/root"}\'\n')
    old.chmod(0o755)
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, python=str(old))

    await status_fails_clearly(config, "Python 3.8.10", "needs 3.10 or newer")


async def test_missing_datasets_root(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, tmp_path / "nowhere")

    await status_fails_clearly(config, "does not exist", str(tmp_path / "nowhere"), json=True)


async def test_datasets_root_that_is_not_a_folder(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    not_a_folder = tmp_path / "datasets.tar"
    not_a_folder.write_text("")
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, not_a_folder)

    await status_fails_clearly(config, "is not a directory", str(not_a_folder))


async def test_malformed_config_names_file_key_and_expectation(tmp_path: Path) -> None:
    config = tmp_path / "eagle-console.toml"
    config.write_text('[hosts.gpu]\nssh = "root@box"\nread_only = "yes"\n')

    await status_fails_clearly(config, str(config), "hosts.gpu.read_only", "true or false", code=2)


async def test_identity_that_is_not_a_key(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path, root: Path
) -> None:
    garbage = tmp_path / "id_garbage"
    garbage.write_text("not a key\n")
    config = write_config(tmp_path, asyncssh_endpoint, state_dir, root, identity=str(garbage))

    await status_fails_clearly(config, "cannot load hosts.gpu.identity", str(garbage))
