"""Real SSH servers on loopback for the tests: asyncssh's, in process, and OpenSSH's sshd.

Both use keys generated at setup and a known_hosts file written here: host-key checking is never
turned off. Exec requests run as real subprocesses through `/bin/sh -c`, as a login shell would.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh

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


def write_client_key(folder: Path) -> tuple[Path, asyncssh.SSHKey]:
    """A fresh ed25519 client key in OpenSSH format, mode 0600."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    path = folder / "id_ed25519"
    key.write_private_key(str(path))
    path.chmod(0o600)
    key.write_public_key(str(path) + ".pub")
    return path, key


def write_known_hosts(path: Path, port: int, public_line: str) -> None:
    """Pin one host key for 127.0.0.1 on `port`, as OpenSSH writes it."""
    algorithm, blob = public_line.split()[:2]
    path.write_text(f"[127.0.0.1]:{port} {algorithm} {blob}\n")


async def _run_as_subprocess(process: asyncssh.SSHServerProcess[bytes]) -> None:
    if process.command is None:
        process.stderr.write(b"this test server runs exec requests only\n")
        process.exit(1)
        return
    local = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", process.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert local.stdin is not None
    assert local.stdout is not None
    assert local.stderr is not None
    feed = asyncio.create_task(_feed_stdin(process.stdin, local.stdin))
    try:
        # All output is forwarded before the exit status, as sshd does, so no byte is lost.
        await asyncio.gather(
            _forward(local.stdout, process.stdout), _forward(local.stderr, process.stderr)
        )
        status = await local.wait()
        process.exit(status)
        await process.wait_closed()
    finally:
        feed.cancel()
        if local.returncode is None:  # the client went away first: end the command as sshd would
            local.kill()
            await local.wait()


async def _feed_stdin(source: asyncssh.SSHReader[bytes], sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, asyncssh.Error):
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    sink.close()


async def _forward(source: asyncio.StreamReader, sink: asyncssh.SSHWriter[bytes]) -> None:
    while chunk := await source.read(65536):
        sink.write(chunk)
        with contextlib.suppress(ConnectionError, asyncssh.Error):
            await sink.drain()


@dataclass
class AsyncsshServer:
    """A running in-process asyncssh server and how to reach it."""

    endpoint: SshEndpoint
    server: asyncssh.SSHAcceptor
    host_key: asyncssh.SSHKey


@contextlib.asynccontextmanager
async def asyncssh_server(folder: Path) -> AsyncIterator[AsyncsshServer]:
    """An asyncssh server on 127.0.0.1, port 0, that trusts one generated client key."""
    folder.mkdir(parents=True, exist_ok=True)
    identity, client_key = write_client_key(folder)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen(
        "127.0.0.1", 0,
        server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(
            client_key.export_public_key().decode()
        ),
        process_factory=_run_as_subprocess,
        encoding=None,
        sftp_factory=True,
        allow_scp=False,
    )  # fmt: skip
    port = server.sockets[0].getsockname()[1]
    known_hosts = folder / "known_hosts"
    write_known_hosts(known_hosts, port, host_key.export_public_key().decode())
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
    port = _free_port()
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited with {process.returncode}: {log.read_text()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.02)
    raise RuntimeError(f"sshd did not listen on {port} within {READY_TIMEOUT_S} s")
