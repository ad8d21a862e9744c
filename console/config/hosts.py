"""What a config file says: its hosts, how each is reached, and the console's own settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.protocol import (
    PipelineConfig,
)

CONFIG_NAME = "eagle-console.toml"
DEFAULT_STATE_DIR = "~/.eagle-agent"
LOCAL = "local"
"""`ssh = "local"`: the host is this machine; its agent runs as a subprocess, with no SSH."""
SSH_ONLY_KEYS = ("known_hosts", "identity", "ssh_config")


class ConfigError(Exception):
    """The config file is missing or wrong; the message names the file, the key and the fix."""


@dataclass(frozen=True, slots=True)
class SshTarget:
    """Where to connect: `user@host:port`, or a `~/.ssh/config` alias (host only)."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


@dataclass(frozen=True, slots=True)
class DeployMapping:
    """A local file or folder and where it lives on the host."""

    local: Path
    """Absolute: relative paths in the config are taken from the config file's folder."""
    remote: str


@dataclass(frozen=True, slots=True)
class HostConfig:
    """One GPU box: how to reach it, which Python runs the agent, and its pipeline."""

    name: str
    ssh: SshTarget
    python: str = "python3"
    state_dir: str = DEFAULT_STATE_DIR
    known_hosts: str | None = None
    """None means ~/.ssh/known_hosts; host keys are checked in every case."""
    identity: str | None = None
    ssh_config: str | None = None
    """An ssh_config file to honour; None means ~/.ssh/config when it exists."""
    read_only: bool = False
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    deploy: tuple[DeployMapping, ...] = ()

    @property
    def is_local(self) -> bool:
        """True for `ssh = "local"`: reached as a subprocess on this machine, not over SSH."""
        return self.ssh == SshTarget(LOCAL)


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    """`[console]`: how the console itself behaves, whichever host it shows."""

    bell: bool = True
    """Ring the terminal bell on each new critical alert."""
    desktop_notify: bool = True
    """Send a desktop notification escape (OSC 777 and OSC 9) on each new critical alert."""


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """Every host in one config file."""

    path: Path
    hosts: dict[str, HostConfig]
    settings: ConsoleSettings = field(default_factory=ConsoleSettings)

    def host(self, name: str) -> HostConfig:
        """The host called `name`, or a ConfigError listing the ones there are."""
        if name not in self.hosts:
            known = ", ".join(sorted(self.hosts)) or "none"
            raise ConfigError(f"{self.path}: no host {name!r} in [hosts] (configured: {known})")
        return self.hosts[name]
