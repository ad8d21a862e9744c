"""Finding, reading and checking a config file: every host and the `[console]` table."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomllib

from console.config.hosts import (
    CONFIG_NAME,
    DEFAULT_STATE_DIR,
    LOCAL,
    SSH_ONLY_KEYS,
    ConfigError,
    ConsoleConfig,
    ConsoleSettings,
    DeployMapping,
    HostConfig,
    SshTarget,
)
from console.config.node_jobs import check_node_jobs
from console.config.pipeline_tables import pipeline_table
from console.config.reader import TableReader, describe


def config_search_path() -> list[Path]:
    """Where the config is looked for when --config is not given, in order."""
    user_dir = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [Path.cwd() / CONFIG_NAME, user_dir / "eagle-console" / "config.toml"]


def console_state_dir() -> Path:
    """The console's own state folder: `$XDG_STATE_HOME/eagle-console` (its log, what it saw)."""
    state_dir = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state_dir / "eagle-console"


def console_log_path() -> Path:
    """The console's own log file, under the user's state dir (`doctor` shows where)."""
    return console_state_dir() / "console.log"


def load_config(path: Path | None = None) -> ConsoleConfig:
    """Read and check the config at `path`, or the first one on the search path."""
    if path is None:
        candidates = config_search_path()
        path = next((c for c in candidates if c.exists()), None)
        if path is None:
            tried = ", ".join(str(c) for c in candidates)
            raise ConfigError(f"no config file found (tried {tried}); pass --config FILE")
    try:
        document = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    return parse_config(document, path)


def parse_config(document: Mapping[str, Any], path: Path) -> ConsoleConfig:
    """Check a parsed TOML document and build the config from it."""
    reader = TableReader(path)
    reader.only(document, "", {"hosts", "console"})
    tables = reader.table(document, "hosts", "", required=False)
    hosts = {name: _host(reader, name, tables) for name in tables}
    check_node_jobs(path, hosts)
    return ConsoleConfig(path, hosts, _settings(reader, document))


def _settings(reader: TableReader, document: Mapping[str, Any]) -> ConsoleSettings:
    """`[console]`: `bell` and `desktop_notify`, both true unless turned off."""
    table = reader.table(document, "console", "", required=False)
    reader.only(table, "console", {"bell", "desktop_notify"})
    flag = "true or false"
    bell = reader.optional(table, "bell", "console", bool, flag)
    desktop = reader.optional(table, "desktop_notify", "console", bool, flag)
    return ConsoleSettings(bell is not False, desktop is not False)


def _host(reader: TableReader, name: str, hosts: Mapping[str, Any]) -> HostConfig:
    where = f"hosts.{name}"
    table = reader.table(hosts, name, "hosts")
    reader.only(table, where, _HOST_KEYS)
    text = reader.text
    if text(table, "ssh", where) == LOCAL:
        _refuse_ssh_keys(reader, table, where)
    return HostConfig(
        name=name,
        ssh=_ssh_target(reader, text(table, "ssh", where), f"{where}.ssh"),
        python=text(table, "python", where, "python3"),
        state_dir=text(table, "state_dir", where, DEFAULT_STATE_DIR),
        known_hosts=reader.optional(table, "known_hosts", where, str, "a file path"),
        identity=reader.optional(table, "identity", where, str, "a key file path"),
        ssh_config=reader.optional(table, "ssh_config", where, str, "a file path"),
        read_only=reader.optional(table, "read_only", where, bool, "true or false") or False,
        pipeline=pipeline_table(reader, table, where),
        deploy=deploy_tables(reader, table, where),
    )


def _refuse_ssh_keys(reader: TableReader, table: Mapping[str, Any], where: str) -> None:
    """A local host has no SSH: a key that only SSH reads is a mistake worth naming."""
    for key in SSH_ONLY_KEYS:
        if key in table:
            raise reader.error(
                f"{where}.{key}",
                f'not used with ssh = "{LOCAL}"',
                "the key removed (a local host needs no SSH settings)",
            )


def deploy_tables(
    reader: TableReader, host: Mapping[str, Any], where: str
) -> tuple[DeployMapping, ...]:
    """`[[hosts.NAME.deploy]]`: local files and their absolute paths on the host."""
    entries = reader.optional(host, "deploy", where, list, "a list of [[deploy]] tables")
    mappings = []
    for index, entry in enumerate(entries or []):
        at = f"{where}.deploy[{index}]"
        if not isinstance(entry, dict):
            raise reader.error(at, f"got {describe(entry)}", "a table with local and remote")
        reader.only(entry, at, {"local", "remote"})
        remote = reader.text(entry, "remote", at)
        if not remote.startswith("/"):
            raise reader.error(f"{at}.remote", f"got {remote!r}", "an absolute path on the host")
        local = Path(reader.text(entry, "local", at)).expanduser()
        mappings.append(
            DeployMapping(local if local.is_absolute() else reader.path.parent / local, remote)
        )
    return tuple(mappings)


_HOST_KEYS = {
    "ssh", "python", "state_dir", "known_hosts", "identity", "ssh_config", "read_only",
    "datasets", "sglang", "deploy", "jobs", "external", "deploy_roots", "tokenizer", "notify",
    "nvidia_smi",
}  # fmt: skip


_SSH_TARGET = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]]+\]|[^:@\s\[\]]+)(?::(?P<port>\d+))?$"
)


def _ssh_target(reader: TableReader, value: str, where: str) -> SshTarget:
    match = _SSH_TARGET.match(value)
    port = int(match["port"]) if match and match["port"] else None
    if match is None or (port is not None and not 0 < port < 65536):
        raise reader.error(where, f"got {value!r}", "user@host[:port] or an ~/.ssh/config alias")
    return SshTarget(match["host"].strip("[]"), match["user"], port)
