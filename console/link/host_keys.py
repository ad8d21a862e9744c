"""Host-key trust: fail closed, explain why, and pin a key only when the user says so.

asyncssh already refuses a key that known_hosts does not trust. This module tells the user which
key was offered (its SHA256 fingerprint), whether the host was unknown or its key changed, and
writes a pin on request. A changed key is never replaced here: the old entry must be removed by
hand, on purpose.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from console.config import HostConfig
from console.link.agent_link import LinkError


def known_hosts_path(host: HostConfig) -> Path:
    """The known_hosts file checked for this host."""
    return Path(host.known_hosts or "~/.ssh/known_hosts").expanduser()


def load_known_hosts(path: Path) -> asyncssh.SSHKnownHosts:
    """The trusted keys in `path`; a missing file trusts nothing (fail closed)."""
    try:
        return asyncssh.read_known_hosts(str(path))
    except FileNotFoundError:
        return asyncssh.import_known_hosts("")
    except (OSError, ValueError) as exc:
        raise LinkError(f"cannot read known_hosts {path}: {exc}") from None


def host_pattern(host: str, port: int | None) -> str:
    """How known_hosts names a host: `host`, or `[host]:port` off port 22."""
    return host if port in (None, 22) else f"[{host}]:{port}"


def known_hosts_target(options: dict[str, Any]) -> tuple[str, int | None]:
    """The name known_hosts must hold for the connection `options` make to find a key.

    The ssh config's HostKeyAlias, else its HostName, with its Port off 22: what asyncssh looks
    up, as OpenSSH does. `ssh = "gpubox"`, an alias for 127.0.0.1 port 2222, is looked up as
    `[127.0.0.1]:2222`: a pin written as `gpubox` was never found.
    """
    wanted = {k: v for k, v in options.items() if k in ("host", "port", "config", "username")}
    resolved = asyncssh.SSHClientConnectionOptions(**wanted)
    port = resolved.port if resolved.port != 22 else None
    return resolved.host_key_alias or resolved.host, port


@dataclass(frozen=True, slots=True)
class OfferedKey:
    """The key a server presented, and what known_hosts already says about the host."""

    key: Any
    pinned_fingerprints: tuple[str, ...]
    """Fingerprints known_hosts pins for this host, the offered one included if trusted."""
    revoked: bool = False
    """known_hosts marks exactly this key @revoked: never trusted, never pinned."""
    known_as: str = ""
    """The name the connection looks the host up by in known_hosts (`known_hosts_target`)."""

    @property
    def fingerprint(self) -> str:
        """The SHA256 fingerprint as ssh-keygen prints it."""
        return str(self.key.get_fingerprint("sha256"))

    @property
    def algorithm(self) -> str:
        """The key type, such as ssh-ed25519."""
        return str(self.key.get_algorithm())

    @property
    def trusted(self) -> bool:
        """True when known_hosts already pins exactly this key."""
        return self.fingerprint in self.pinned_fingerprints

    @property
    def changed(self) -> bool:
        """True when known_hosts pins other keys for this host and not this one: beware."""
        return bool(self.pinned_fingerprints) and not self.trusted and not self.revoked


class UntrustedHostKeyError(LinkError):
    """The server's host key is not trusted; the message says what was offered and what to do."""

    def __init__(self, host: HostConfig, offered: OfferedKey | None) -> None:
        self.offered = offered
        super().__init__(_refusal_message(host, offered))


def _known_as(host: HostConfig, offered: OfferedKey) -> str:
    """The known_hosts name of the host: the connection's, else the config's `ssh` host."""
    return offered.known_as or host_pattern(host.ssh.host, host.ssh.port)


def _refusal_message(host: HostConfig, offered: OfferedKey | None) -> str:
    path = known_hosts_path(host)
    if offered is None:
        return f"{host.name}: host key of {host.ssh} is not trusted by {path}"
    if offered.revoked:
        return (
            f"{host.name}: REVOKED host key for {host.ssh}: it offers {offered.algorithm} "
            f"{offered.fingerprint}, which {path} marks @revoked. Refusing; it cannot be pinned. "
            "Ask whoever runs the box which key it should offer."
        )
    if offered.changed:
        pattern = _known_as(host, offered)
        return (
            f"{host.name}: HOST KEY CHANGED for {host.ssh}: it offers {offered.algorithm} "
            f"{offered.fingerprint} but {path} pins {', '.join(offered.pinned_fingerprints)}. "
            "Someone may be intercepting the connection, or the box was rebuilt. Refusing. "
            f"If you know the box was rebuilt, remove the old entry with "
            f"`ssh-keygen -R '{pattern}' -f {path}` and pin the new key with "
            f"`eagle-console trust {host.name}`."
        )
    pattern = _known_as(host, offered)
    named = (
        f" (known_hosts names it {pattern})"
        if pattern != host_pattern(host.ssh.host, host.ssh.port)
        else ""
    )
    return (
        f"{host.name}: unknown host key for {host.ssh}{named}: {offered.algorithm} "
        f"{offered.fingerprint} is not in {path}. If this is the right key, pin it with "
        f"`eagle-console trust {host.name}`."
    )


async def fetch_offered_key(
    host: HostConfig, options: dict[str, Any] | None = None
) -> OfferedKey | None:
    """Ask the server for its host key without trusting it, and compare with known_hosts."""
    options = options or {"host": host.ssh.host, "port": host.ssh.port or ()}
    probe = {k: v for k, v in options.items() if k in ("host", "port", "config")}
    try:
        key = await asyncssh.get_server_host_key(**probe)
    except (OSError, asyncssh.Error):
        return None
    if key is None:
        return None
    path = known_hosts_path(host)
    name, port = known_hosts_target(options)
    known_as = host_pattern(name, port)
    matched = load_known_hosts(path).match(name, "", port)  # "": a name is fine
    pinned = dict.fromkeys(str(k.get_fingerprint("sha256")) for k in matched[0])
    revoked = {str(k.get_fingerprint("sha256")) for k in matched[2]} | revoked_fingerprints(path)
    fingerprint = str(key.get_fingerprint("sha256"))
    return OfferedKey(key, tuple(pinned), revoked=fingerprint in revoked, known_as=known_as)


def revoked_fingerprints(path: Path) -> set[str]:
    """Every key known_hosts marks @revoked, whatever its host pattern.

    asyncssh misses `@revoked [host]:port ...` lines, and OpenSSH treats a revoked key as
    revoked: so the console reads the markers itself and refuses those keys on every host.
    """
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[0] == "@revoked":
            try:
                key = asyncssh.import_public_key(f"{fields[2]} {fields[3]}")
            except (asyncssh.KeyImportError, ValueError):
                continue
            found.add(str(key.get_fingerprint("sha256")))
    return found


def refuse_revoked(host: HostConfig, key: Any) -> None:
    """Raise UntrustedHostKeyError when the key a server proved it holds is marked @revoked."""
    if str(key.get_fingerprint("sha256")) in revoked_fingerprints(known_hosts_path(host)):
        raise UntrustedHostKeyError(host, OfferedKey(key, (), revoked=True))


def pin_host_key(host: HostConfig, offered: OfferedKey) -> Path:
    """Append the offered key to the host's known_hosts file; refuses a changed or revoked key."""
    if offered.changed or offered.revoked:
        raise LinkError(_refusal_message(host, offered))
    path = known_hosts_path(host)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    public = offered.key.export_public_key("openssh").decode().split()
    line = f"{_known_as(host, offered)} {public[0]} {public[1]}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as handle:
        handle.write(line)
    return path
