"""The console's TOML config: hosts, how to reach them, and their pipeline layout (DESIGN §9).

Every mistake is reported as the file, the key and what was expected, so a user can fix it
without reading code. This module never imports Textual: the headless commands use it too.
"""

from __future__ import annotations

import math
import os
import re
import typing
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import tomllib

from agent.protocol import (
    DatasetsConfig,
    GuardMode,
    JobSpec,
    NotifyConfig,
    PipelineConfig,
    RestartPolicy,
    ServerApi,
    Severity,
    StopSignal,
    field_range,
    in_range,
    range_text,
    show_number,
)

CONFIG_NAME = "eagle-console.toml"
DEFAULT_STATE_DIR = "~/.eagle-agent"
LOCAL = "local"
"""`ssh = "local"`: the host is this machine; its agent runs as a subprocess, with no SSH."""
_SSH_ONLY_KEYS = ("known_hosts", "identity", "ssh_config")


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
    reader = _Reader(path)
    reader.only(document, "", {"hosts", "console"})
    hosts = reader.table(document, "hosts", "", required=False)
    return ConsoleConfig(
        path, {name: _host(reader, name, hosts) for name in hosts}, _settings(reader, document)
    )


def _settings(reader: _Reader, document: Mapping[str, Any]) -> ConsoleSettings:
    """`[console]`: `bell` and `desktop_notify`, both true unless turned off."""
    table = reader.table(document, "console", "", required=False)
    reader.only(table, "console", {"bell", "desktop_notify"})
    flag = "true or false"
    bell = reader.optional(table, "bell", "console", bool, flag)
    desktop = reader.optional(table, "desktop_notify", "console", bool, flag)
    return ConsoleSettings(bell is not False, desktop is not False)


def _host(reader: _Reader, name: str, hosts: Mapping[str, Any]) -> HostConfig:
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
        pipeline=_pipeline(reader, table, where),
        deploy=_deploy(reader, table, where),
    )


def _refuse_ssh_keys(reader: _Reader, table: Mapping[str, Any], where: str) -> None:
    """A local host has no SSH: a key that only SSH reads is a mistake worth naming."""
    for key in _SSH_ONLY_KEYS:
        if key in table:
            raise reader.error(
                f"{where}.{key}",
                f'not used with ssh = "{LOCAL}"',
                "the key removed (a local host needs no SSH settings)",
            )


def _deploy(reader: _Reader, host: Mapping[str, Any], where: str) -> tuple[DeployMapping, ...]:
    entries = reader.optional(host, "deploy", where, list, "a list of [[deploy]] tables")
    mappings = []
    for index, entry in enumerate(entries or []):
        at = f"{where}.deploy[{index}]"
        if not isinstance(entry, dict):
            raise reader.error(at, f"got {_describe(entry)}", "a table with local and remote")
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
}  # fmt: skip


def _pipeline(reader: _Reader, host: Mapping[str, Any], where: str) -> PipelineConfig:
    sglang = reader.table(host, "sglang", where, required=False)
    reader.only(sglang, f"{where}.sglang", {"url", "log", "api_key_file", "api", "model"})
    jobs = reader.table(host, "jobs", where, required=False)
    external = reader.table(host, "external", where, required=False)
    tokenizer_path, trust_remote_code = _tokenizer(reader, host, where)
    return PipelineConfig(
        datasets=_datasets(reader, host, where) if "datasets" in host else None,
        sglang_url=reader.optional(sglang, "url", f"{where}.sglang", str, "an http:// URL"),
        sglang_log=reader.optional(sglang, "log", f"{where}.sglang", str, "a file path"),
        sglang_api_key_file=_host_path(reader, sglang, "api_key_file", f"{where}.sglang"),
        sglang_api=_server_api(reader, sglang, f"{where}.sglang"),
        sglang_model=reader.optional(sglang, "model", f"{where}.sglang", str, "a model name"),
        jobs={name: _job(reader, jobs, name, f"{where}.jobs") for name in jobs},
        external={name: _regex(reader, external, name, f"{where}.external") for name in external},
        deploy_roots=_paths(reader, host, "deploy_roots", where),
        tokenizer=tokenizer_path,
        trust_remote_code=trust_remote_code,
        notify=_notify(reader, host, where) if "notify" in host else None,
    )


def _notify(reader: _Reader, host: Mapping[str, Any], where: str) -> NotifyConfig:
    """`[hosts.NAME.notify]`: the webhook URL (http or https) and the least severity sent."""
    table = reader.table(host, "notify", where)
    where = f"{where}.notify"
    reader.only(table, where, {"url", "min_severity"})
    url = reader.text(table, "url", where)
    if urllib.parse.urlsplit(url).scheme not in ("http", "https") or "\n" in url:
        raise reader.error(f"{where}.url", "not an http(s) URL", "an http:// or https:// URL")
    severity = _SEVERITIES.get(reader.text(table, "min_severity", where, "warning"))
    if severity is None:
        raise reader.error(f"{where}.min_severity", "unknown", "info, warning or error")
    return NotifyConfig(url, severity)


_SEVERITIES: dict[str, Severity] = {"info": "info", "warning": "warning", "error": "error"}
_SERVER_APIS: dict[str, ServerApi] = {
    "sglang": "sglang", "openai-completions": "openai-completions", "openai-chat": "openai-chat",
}  # fmt: skip


def _server_api(reader: _Reader, sglang: Mapping[str, Any], where: str) -> ServerApi | None:
    """`api`: how the server is spoken to, one of the runner's --api values (unset: guessed)."""
    api = reader.optional(sglang, "api", where, str, "sglang, openai-completions or openai-chat")
    if api is not None and api not in _SERVER_APIS:
        raise reader.error(
            f"{where}.api", f"got {api!r}", "sglang, openai-completions or openai-chat"
        )
    return _SERVER_APIS[api] if api is not None else None


def _tokenizer(reader: _Reader, host: Mapping[str, Any], where: str) -> tuple[str | None, bool]:
    """`[tokenizer] path` (a folder on the host) and `trust_remote_code` (off unless set true)."""
    table = reader.table(host, "tokenizer", where, required=False)
    where = f"{where}.tokenizer"
    reader.only(table, where, {"path", "trust_remote_code"})
    path = reader.optional(table, "path", where, str, "an absolute folder path on the host")
    if path is not None and not path.startswith("/"):
        raise reader.error(f"{where}.path", f"got {path!r}", "an absolute folder path on the host")
    trust = reader.optional(table, "trust_remote_code", where, bool, "true or false")
    return path, bool(trust)


def _host_path(reader: _Reader, table: Mapping[str, Any], key: str, where: str) -> str | None:
    """A path on the host: absolute, or under the remote user's home (`~/...`)."""
    value = reader.optional(table, key, where, str, "a path on the host, /... or ~/...")
    if value is not None and not value.startswith(("/", "~/")):
        raise reader.error(_join(where, key), f"got {value!r}", "a path on the host, /... or ~/...")
    return value


def _regex(reader: _Reader, table: Mapping[str, Any], key: str, where: str) -> str:
    pattern = reader.text(table, key, where)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise reader.error(
            _join(where, key), f"{pattern!r} is not a regex ({exc})", "a Python regex"
        ) from None
    return pattern


def _paths(reader: _Reader, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = reader.optional(table, key, where, list, "a list of absolute paths")
    if value is None:
        return ()
    if not all(isinstance(item, str) and item.startswith("/") for item in value):
        raise reader.error(_join(where, key), f"got {value!r}", "a list of absolute paths")
    return tuple(value)


_JOB_KINDS = {
    "inference", "server", "vocab", "hidden_states", "train", "command",
    "export", "evaluate", "drafter_server",
}  # fmt: skip
_SIGNALS: dict[str, StopSignal] = {name: name for name in typing.get_args(StopSignal)}


def _job(reader: _Reader, jobs: Mapping[str, Any], name: str, where: str) -> JobSpec:
    table = reader.table(jobs, name, where)
    where = f"{where}.{name}"
    reader.only(table, where, {"argv", "kind", "cwd", "env", "gpu", "per_dataset", "stop_signal",
                               "grace_s", "term_grace_s", *_RESTART_KEYS})  # fmt: skip
    argv = reader.optional(table, "argv", where, list, "a list of strings (no shell string)")
    if not argv or not all(isinstance(part, str) for part in argv):
        raise reader.error(f"{where}.argv", f"got {argv!r}", "a non-empty list of strings")
    kind = reader.text(table, "kind", where, "command")
    if kind not in _JOB_KINDS:
        raise reader.error(
            f"{where}.kind", f"got {kind!r}", "one of " + ", ".join(sorted(_JOB_KINDS))
        )
    stop_signal = reader.text(table, "stop_signal", where, "SIGTERM")
    if stop_signal not in _SIGNALS:
        raise reader.error(
            f"{where}.stop_signal", f"got {stop_signal!r}", "one of " + ", ".join(sorted(_SIGNALS))
        )
    env = reader.table(table, "env", where, required=False)
    return JobSpec(
        argv=tuple(argv),
        kind=kind,
        cwd=reader.optional(table, "cwd", where, str, "a folder path"),
        env={key: reader.text(env, key, f"{where}.env") for key in env},
        gpu=bool(reader.optional(table, "gpu", where, bool, "true or false")),
        per_dataset=bool(reader.optional(table, "per_dataset", where, bool, "true or false")),
        stop_signal=_SIGNALS[stop_signal],
        grace_s=reader.seconds(table, "grace_s", where, 30.0, JobSpec),
        term_grace_s=reader.seconds(table, "term_grace_s", where, 10.0, JobSpec),
        **_restart(reader, table, where),
    )


_RESTART_KEYS = ("restart", "max_restarts", "restart_window_s", "restart_delay_s")
_RESTART_POLICIES: dict[str, RestartPolicy] = {"no": "no", "on-failure": "on-failure"}


def _restart(reader: _Reader, table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The job's restart policy: restart = "no" | "on-failure", its cap, window and back-off."""
    policy = reader.text(table, "restart", where, "no")
    if policy not in _RESTART_POLICIES:
        raise reader.error(f"{where}.restart", f"got {policy!r}", 'one of "no", "on-failure"')
    most = reader.optional(table, "max_restarts", where, int, "a whole number of restarts")
    if most is not None:
        reader.in_range(most, _join(where, "max_restarts"), JobSpec, "a number of restarts")
    return {
        "restart": _RESTART_POLICIES[policy], "max_restarts": 5 if most is None else most,
        "restart_window_s": reader.seconds(table, "restart_window_s", where, 3600.0, JobSpec),
        "restart_delay_s": reader.seconds(table, "restart_delay_s", where, 10.0, JobSpec),
    }  # fmt: skip


def _datasets(reader: _Reader, host: Mapping[str, Any], where: str) -> DatasetsConfig:
    table = reader.table(host, "datasets", where)
    where = f"{where}.datasets"
    reader.only(table, where, {"root", "prompts", "responses", "budget", "budgets", "stall_after_s",
                               "overrun_alert_share", "low_disk_floor_gib", "guard", "guards",
                               "stall_guard_s"})  # fmt: skip
    budgets = reader.table(table, "budgets", where, required=False)
    guards = reader.table(table, "guards", where, required=False)
    return DatasetsConfig(
        root=reader.text(table, "root", where),
        prompts_file=reader.text(table, "prompts", where, "prompts.jsonl"),
        responses_file=reader.text(table, "responses", where, "raw_responses.jsonl"),
        budget=reader.count(table, "budget", where),
        budgets={
            name: reader.count(budgets, name, f"{where}.budgets", "budgets") or 0
            for name in budgets
        },
        stall_after_s=reader.seconds(table, "stall_after_s", where, 600.0, DatasetsConfig),
        overrun_alert_share=reader.seconds(
            table, "overrun_alert_share", where, 0.02, DatasetsConfig
        ),
        low_disk_floor_bytes=_disk_floor(reader, table, where),
        guard=_guard(reader, table, "guard", where),
        guards={name: _guard(reader, guards, name, f"{where}.guards") for name in guards},
        stall_guard_s=(
            reader.seconds(table, "stall_guard_s", where, 0.0, DatasetsConfig)
            if "stall_guard_s" in table
            else None
        ),
    )


def _disk_floor(reader: _Reader, table: Mapping[str, Any], where: str) -> int:
    """`low_disk_floor_gib`, in bytes, within the protocol's range for the floor."""
    gib = reader.seconds(table, "low_disk_floor_gib", where, 1.0)
    if not in_range(DatasetsConfig, "low_disk_floor_bytes", gib * 2**30):  # inf for 1e300
        _, high = field_range(DatasetsConfig, "low_disk_floor_bytes")
        expected = f"a size in GiB from 0 to {show_number(high / 2**30)}"
        raise reader.error(_join(where, "low_disk_floor_gib"), f"got {gib:g}", expected)
    return round(gib * 2**30)


def _guard(reader: _Reader, table: Mapping[str, Any], key: str, where: str) -> GuardMode:
    """A budget guard: "alert" (the default) or "stop"."""
    value = reader.optional(table, key, where, str, '"alert" or "stop"') or "alert"
    if value not in ("alert", "stop"):
        raise reader.error(_join(where, key), f"got {value!r}", '"alert" or "stop"')
    return "stop" if value == "stop" else "alert"


_SSH_TARGET = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]]+\]|[^:@\s\[\]]+)(?::(?P<port>\d+))?$"
)


def _ssh_target(reader: _Reader, value: str, where: str) -> SshTarget:
    match = _SSH_TARGET.match(value)
    port = int(match["port"]) if match and match["port"] else None
    if match is None or (port is not None and not 0 < port < 65536):
        raise reader.error(where, f"got {value!r}", "user@host[:port] or an ~/.ssh/config alias")
    return SshTarget(match["host"].strip("[]"), match["user"], port)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Reader:
    """Typed look-ups in a TOML document that fail with the file, key and expectation."""

    path: Path

    def error(self, key: str, problem: str, expected: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {problem}; expected {expected}")

    def only(self, table: Mapping[str, Any], where: str, allowed: set[str]) -> None:
        for key in table:
            if key not in allowed:
                full = _join(where, key)
                raise self.error(full, "unknown key", "one of " + ", ".join(sorted(allowed)))

    def table(
        self, parent: Mapping[str, Any], key: str, where: str, *, required: bool = True
    ) -> Mapping[str, Any]:
        full = _join(where, key)
        if key not in parent and not required:
            return {}
        value = self.optional(parent, key, where, dict, "a table")
        if value is None:
            raise self.error(full, "missing", "a table")
        return value

    def text(self, table: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
        value = self.optional(table, key, where, str, "a string")
        if value is None and not default:
            raise self.error(_join(where, key), "missing", "a string")
        if value == "":
            raise self.error(_join(where, key), "empty", "a non-empty string")
        return value if value is not None else default

    def count(
        self, table: Mapping[str, Any], key: str, where: str, field: str = "budget"
    ) -> int | None:
        """A budget in tokens: positive, within the protocol's range for `DatasetsConfig.field`."""
        value = self.optional(table, key, where, int, "a whole number of tokens")
        if value is not None and value <= 0:
            raise self.error(_join(where, key), f"got {value}", "a positive number of tokens")
        if value is not None:
            self.in_range(value, _join(where, key), DatasetsConfig, "a number of tokens", field)
        return value

    def in_range(
        self, value: float, key: str, owner: type, unit: str, field: str | None = None
    ) -> None:
        """Refuse, naming the config key, a value the agent would refuse at hello.

        The range is the protocol's one table (`agent.protocol.ranges`), by `owner` and `field`
        (the key's last part unless given): the agent checks the same bounds.
        """
        name = field or key.rsplit(".", 1)[-1]
        if not in_range(owner, name, value):
            raise self.error(key, f"got {show_number(value)}", f"{unit} {range_text(owner, name)}")

    def seconds(
        self,
        table: Mapping[str, Any],
        key: str,
        where: str,
        default: float,
        owner: type | None = None,
    ) -> float:
        """A number of seconds >= 0 (or a share, a size), within `owner`'s range for `key`."""
        value = table.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
        ):
            raise self.error(
                _join(where, key), f"got {_describe(value)}", "a number of seconds >= 0"
            )
        if owner is not None:
            unit = "a number of seconds" if key.endswith("_s") else "a number"
            self.in_range(value, _join(where, key), owner, unit)
        return float(value)

    def optional(
        self, table: Mapping[str, Any], key: str, where: str, kind: type[T], expected: str
    ) -> T | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(_join(where, key), f"got {_describe(value)}", expected)
        return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _describe(value: Any) -> str:
    names: dict[type, Callable[[Any], str]] = {
        str: lambda v: f"the string {v!r}",
        bool: lambda v: f"the boolean {str(v).lower()}",
        int: lambda v: f"the number {v}",
        dict: lambda v: "a table",
        list: lambda v: "a list",
    }
    return names.get(type(value), lambda v: type(v).__name__)(value)
