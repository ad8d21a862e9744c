"""Real SSH servers on loopback for the tests: asyncssh's (console.link.loopback_ssh), in process, and
OpenSSH's sshd.

Both use keys generated at setup and a known_hosts file written here: host-key checking is never
turned off. Exec requests run as real subprocesses through `/bin/sh -c`, as a login shell would.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from console.link.loopback_ssh import listen_loopback, write_client_key, write_known_hosts
from tests.support.ports import free_port
from tests.support.waits import wait_until_blocking

READY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SshEndpoint:
    """How a test reaches one loopback SSH server."""

    host: str
    port: int
    user: str
    identity: Path
    known_hosts: Path
    host_key_fingerprint: str

    def config_toml(
        self, name: str, *, python: str, state_dir: Path, datasets_root: Path, **overrides: str
    ) -> str:
        """A host section for eagle-console.toml pointing at this server; overrides replace keys
        (an empty string drops the key)."""
        settings = {
            "ssh": f"{self.user}@{self.host}:{self.port}",
            "known_hosts": str(self.known_hosts),
            "identity": str(self.identity),
            "python": python,
            "state_dir": str(state_dir),
        } | overrides
        lines = [f"[hosts.{name}]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items() if value]
        lines += [f"[hosts.{name}.datasets]", f"root = {json.dumps(str(datasets_root))}"]
        return "\n".join(lines + ["budget = 1000", ""])


@dataclass
class AsyncsshServer:
    """A running in-process asyncssh server and how to reach it."""

    endpoint: SshEndpoint
    server: asyncssh.SSHAcceptor
    host_key: asyncssh.SSHKey


@contextlib.asynccontextmanager
async def asyncssh_server(folder: Path) -> AsyncIterator[AsyncsshServer]:
    """An asyncssh server on 127.0.0.1, port 0, that trusts one generated client key."""
    loopback = await listen_loopback(folder)
    server, port, host_key = loopback.acceptor, loopback.port, loopback.host_key
    identity, known_hosts = loopback.identity, loopback.known_hosts
    endpoint = SshEndpoint(
        "127.0.0.1", port, getpass.getuser(), identity, known_hosts,
        host_key.get_fingerprint("sha256"),
    )  # fmt: skip
    try:
        yield AsyncsshServer(endpoint, server, host_key)
    finally:
        server.close()
        await server.wait_closed()


def sshd_binary() -> str | None:
    """OpenSSH's sshd, if installed."""
    found = shutil.which("sshd") or "/usr/sbin/sshd"
    return found if os.access(found, os.X_OK) else None


@contextlib.contextmanager
def openssh_server(folder: Path) -> Iterator[SshEndpoint]:
    """OpenSSH's sshd on a loopback port with its own config and keys; the machine's is untouched."""
    sshd = sshd_binary()
    assert sshd is not None, "sshd is not installed"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    host_key = folder / "ssh_host_ed25519_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
    identity, client_key = write_client_key(folder)
    authorized = folder / "authorized_keys"
    authorized.write_text(client_key.export_public_key().decode())
    authorized.chmod(0o600)
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(_sshd_config(folder, port, host_key, authorized))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
    log = (folder / "sshd.log").open("wb")
    process = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stderr=log)
    try:
        _wait_for_port(port, process, folder / "sshd.log")
        known_hosts = folder / "known_hosts"
        write_known_hosts(known_hosts, port, Path(str(host_key) + ".pub").read_text())
        fingerprint = asyncssh.read_public_key(str(host_key) + ".pub").get_fingerprint("sha256")
        yield SshEndpoint("127.0.0.1", port, getpass.getuser(), identity, known_hosts, fingerprint)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _sshd_config(folder: Path, port: int, host_key: Path, authorized: Path) -> str:
    return "\n".join(
        [
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {folder / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            f"AllowUsers {getpass.getuser()}",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "AllowAgentForwarding no",
            "Subsystem sftp internal-sftp",
            "LogLevel VERBOSE",
            "",
        ]
    )


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:

    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    up = wait_until_blocking(lambda: process.poll() is not None or listening(), READY_TIMEOUT_S)
    if process.poll() is not None:
        raise RuntimeError(f"sshd exited with {process.returncode}: {log.read_text()}")
    if not up:
        raise RuntimeError(f"sshd did not listen on {port} within {READY_TIMEOUT_S} s")
