"""An agent on a remote host, reached over one asyncssh connection.

Connect with host keys checked (never off), agent forwarding off and keepalive on; check the
remote Python; upload this console's agent bundle over SFTP when the host lacks it; run the fixed
`attach` command. The only strings in a remote command line come from the config (the Python
path and state dir), always quoted; everything else travels as JSON on the channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import posixpath
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from console.config import HostConfig
from console.link.agent_link import AgentLink, LinkError
from console.link.bundle import AgentBundle, local_bundle
from console.link.file_channel import SftpChannel
from console.link.host_keys import (
    UntrustedHostKeyError,
    fetch_offered_key,
    known_hosts_path,
    load_known_hosts,
    refuse_revoked,
)

KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_COUNT_MAX = 3
"""SSH's keepalive is what ends a dead link (in about 20 s): an agent slow to answer never does."""
CONNECT_TIMEOUT_S = 20
MIN_PYTHON = (3, 10)
PROBE_SCRIPT = (
    "import json, os, sys; "
    "print(json.dumps({'version': list(sys.version_info[:3]), 'home': os.path.expanduser('~')}))"
)


def connect_options(host: HostConfig) -> dict[str, Any]:
    """The asyncssh.connect arguments for a host: strict host keys, no agent forwarding."""
    options: dict[str, Any] = {
        "host": host.ssh.host,
        "known_hosts": load_known_hosts(known_hosts_path(host)),
        "agent_forwarding": False,
        "keepalive_interval": KEEPALIVE_INTERVAL_S,
        "keepalive_count_max": KEEPALIVE_COUNT_MAX,
        "connect_timeout": CONNECT_TIMEOUT_S,
    }
    if host.ssh.port is not None:
        options["port"] = host.ssh.port
    if host.ssh.user is not None:
        options["username"] = host.ssh.user
    if host.identity is not None:
        options["client_keys"] = [_identity(host)]
    if host.ssh_config is not None:
        options["config"] = [str(Path(host.ssh_config).expanduser())]
    return options


def _identity(host: HostConfig) -> asyncssh.SSHKey:
    path = Path(host.identity or "").expanduser()
    try:
        return asyncssh.read_private_key(str(path))
    except OSError as exc:
        problem = exc.strerror or str(exc)
    except asyncssh.KeyImportError as exc:
        problem = f"{exc}; an encrypted key belongs in ssh-agent, not in the config"
    raise LinkError(f"{host.name}: cannot load hosts.{host.name}.identity {path}: {problem}")


async def connect(host: HostConfig) -> asyncssh.SSHClientConnection:
    """Open the SSH connection, turning every failure into one clear LinkError line."""
    options = connect_options(host)
    try:
        conn = await asyncssh.connect(**options)
    except asyncssh.HostKeyNotVerifiable:
        raise UntrustedHostKeyError(host, await fetch_offered_key(host, options)) from None
    except asyncssh.PermissionDenied as exc:
        raise LinkError(
            f"{host.name}: authentication failed for {host.ssh} ({exc.reason}); "
            f"check hosts.{host.name}.identity, your ssh-agent, or the user name"
        ) from None
    except (OSError, asyncssh.Error, TimeoutError) as exc:
        raise LinkError(f"{host.name}: cannot reach {host.ssh}: {_reason(exc)}") from None
    try:
        refuse_revoked(host, conn.get_server_host_key())  # before a single command runs
    except UntrustedHostKeyError:
        conn.close()
        raise
    return conn


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer in {CONNECT_TIMEOUT_S} s"
    if isinstance(exc, asyncssh.Error):
        return exc.reason
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


@dataclass(frozen=True, slots=True)
class RemotePython:
    """The host's interpreter, as the probe found it."""

    version: tuple[int, ...]
    home: str


async def probe_python(conn: asyncssh.SSHClientConnection, host: HostConfig) -> RemotePython:
    """Check the configured Python runs on the host and is new enough for the agent."""
    command = shlex.join([host.python, "-c", PROBE_SCRIPT])
    result = await conn.run(command, check=False, timeout=CONNECT_TIMEOUT_S)
    return read_probe(host, result.exit_status, str(result.stdout), str(result.stderr or ""))


def read_probe(host: HostConfig, status: int | None, stdout: str, stderr: str) -> RemotePython:
    """What PROBE_SCRIPT printed, checked: a LinkError naming the fix when it is not usable."""
    where = "this machine" if host.is_local else str(host.ssh)
    try:
        found = json.loads(stdout)
        version = tuple(int(part) for part in found["version"])
    except (ValueError, KeyError, TypeError):
        detail = stderr.strip().splitlines()
        printed = f"printed {stdout[:120]!r}" if stdout.strip() else "printed nothing"
        raise LinkError(
            f"{host.name}: cannot run Python {host.python!r} on {where} "
            f"({detail[-1] if detail else f'exit {status}, {printed}'}); "
            f"set hosts.{host.name}.python to a Python 3.10+ interpreter on the box (an absolute path)"
        ) from None
    if version < MIN_PYTHON:
        raise LinkError(
            f"{host.name}: {host.python} on {where} is Python "
            f"{'.'.join(map(str, version))}; the agent needs 3.10 or newer"
        )
    return RemotePython(version, str(found["home"]))


def remote_state_dir(host: HostConfig, python: RemotePython) -> str:
    """The state directory as an absolute path on the host (`~` expanded there, not here)."""
    state = host.state_dir
    if state == "~" or state.startswith("~/"):
        state = python.home + state[1:]
    return posixpath.normpath(state)


async def ensure_bundle(
    conn: asyncssh.SSHClientConnection, state_dir: str, bundle: AgentBundle
) -> str:
    """Upload the bundle unless the host has it; returns the folder to put on PYTHONPATH."""
    bundles = posixpath.join(state_dir, "bundles")
    final = posixpath.join(bundles, bundle.folder)
    async with conn.start_sftp_client() as sftp:
        if await sftp.isdir(final):
            return final
        await sftp.makedirs(bundles, attrs=asyncssh.SFTPAttrs(permissions=0o700), exist_ok=True)
        staging = posixpath.join(bundles, f".upload-{bundle.sha256[:12]}-{secrets.token_hex(4)}")
        await _upload(sftp, staging, bundle)
        try:
            await sftp.rename(staging, final)
        except asyncssh.SFTPError:
            if not await sftp.isdir(final):
                raise
            await sftp.rmtree(staging)  # another console uploaded the same bundle first
    return final


async def _upload(sftp: asyncssh.SFTPClient, staging: str, bundle: AgentBundle) -> None:
    made: set[str] = set()
    for relative, content in bundle.files:
        target = posixpath.join(staging, relative)
        parent = posixpath.dirname(target)
        if parent not in made:
            await sftp.makedirs(parent, exist_ok=True)
            made.add(parent)
        async with sftp.open(target, "wb") as handle:
            await handle.write(content)


def attach_command(host: HostConfig, bundle_dir: str, state_dir: str) -> str:
    """The one fixed remote command: config values only, each quoted.

    It runs in the bundle's folder: `python -m` puts the working dir first on sys.path, so from
    $HOME a folder there called `agent` would be imported instead of the bundle.
    """
    return f"cd {shlex.quote(bundle_dir)} && " + shlex.join(
        ["env", f"PYTHONPATH={bundle_dir}", host.python, "-m", "agent", "attach",
         "--state-dir", state_dir]
    )  # fmt: skip


async def open_ssh_link(host: HostConfig, bundle: AgentBundle | None = None) -> AgentLink:
    """Connect, bootstrap `bundle` (default: ours), complete hello; each failure one LinkError."""
    conn = await connect(host)
    try:
        return await _attach(conn, host, bundle or local_bundle())
    except BaseException:
        conn.close()
        raise


async def _attach(
    conn: asyncssh.SSHClientConnection, host: HostConfig, bundle: AgentBundle
) -> AgentLink:
    try:
        python = await probe_python(conn, host)
        state_dir = remote_state_dir(host, python)
        bundle_dir = await ensure_bundle(conn, state_dir, bundle)
        process = await conn.create_process(
            attach_command(host, bundle_dir, state_dir), encoding=None
        )
    except (OSError, asyncssh.Error) as exc:
        raise LinkError(
            f"{host.name}: cannot start the agent on {host.ssh}: {_reason(exc)}"
        ) from None

    async def close() -> None:
        process.close()
        conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.wait_closed(), 5)

    link = AgentLink(process.stdout, process.stdin, close, f"{host.name} ({host.ssh})")
    link.files = SftpChannel(conn)
    try:
        await link.hello(host.pipeline, bundle.sha256)
    except LinkError as exc:
        stderr = await _read_some(process.stderr)
        await link.close()
        raise LinkError(f"{exc}{'; agent said: ' + stderr if stderr else ''}") from None
    return link


async def _read_some(stream: asyncssh.SSHReader[bytes]) -> str:
    with contextlib.suppress(Exception):
        data = await asyncio.wait_for(stream.read(4096), 2)
        return data.decode(errors="replace").strip().replace("\n", " | ")
    return ""
