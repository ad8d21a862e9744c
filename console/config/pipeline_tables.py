"""A host's pipeline: its datasets, server, tokenizer, webhook, jobs and deploy roots."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from agent.protocol import (
    DatasetsConfig,
    GuardMode,
    NotifyConfig,
    PipelineConfig,
    ServerApi,
    Severity,
    field_range,
    in_range,
    show_number,
)
from console.config.job_tables import job_table
from console.config.reader import TableReader, join_key


def pipeline_table(reader: TableReader, host: Mapping[str, Any], where: str) -> PipelineConfig:
    """Everything of a host the agent is told at hello: its `PipelineConfig`."""
    sglang = reader.table(host, "sglang", where, required=False)
    reader.only(sglang, f"{where}.sglang", {"url", "log", "api_key_file", "api", "model"})
    jobs = reader.table(host, "jobs", where, required=False)
    external = reader.table(host, "external", where, required=False)
    tokenizer_path, trust_remote_code = _tokenizer(reader, host, where)
    return PipelineConfig(
        datasets=datasets_table(reader, host, where) if "datasets" in host else None,
        sglang_url=reader.optional(sglang, "url", f"{where}.sglang", str, "an http:// URL"),
        sglang_log=reader.optional(sglang, "log", f"{where}.sglang", str, "a file path"),
        sglang_api_key_file=_host_path(reader, sglang, "api_key_file", f"{where}.sglang"),
        sglang_api=_server_api(reader, sglang, f"{where}.sglang"),
        sglang_model=reader.optional(sglang, "model", f"{where}.sglang", str, "a model name"),
        jobs={name: job_table(reader, jobs, name, f"{where}.jobs") for name in jobs},
        external={name: _regex(reader, external, name, f"{where}.external") for name in external},
        deploy_roots=_paths(reader, host, "deploy_roots", where),
        tokenizer=tokenizer_path,
        trust_remote_code=trust_remote_code,
        notify=_notify(reader, host, where) if "notify" in host else None,
        nvidia_smi=_host_path(reader, host, "nvidia_smi", where),
    )


def _notify(reader: TableReader, host: Mapping[str, Any], where: str) -> NotifyConfig:
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


def _server_api(reader: TableReader, sglang: Mapping[str, Any], where: str) -> ServerApi | None:
    """`api`: how the server is spoken to, one of the runner's --api values (unset: guessed)."""
    api = reader.optional(sglang, "api", where, str, "sglang, openai-completions or openai-chat")
    if api is not None and api not in _SERVER_APIS:
        raise reader.error(
            f"{where}.api", f"got {api!r}", "sglang, openai-completions or openai-chat"
        )
    return _SERVER_APIS[api] if api is not None else None


def _tokenizer(reader: TableReader, host: Mapping[str, Any], where: str) -> tuple[str | None, bool]:
    """`[tokenizer] path` (a folder on the host) and `trust_remote_code` (off unless set true)."""
    table = reader.table(host, "tokenizer", where, required=False)
    where = f"{where}.tokenizer"
    reader.only(table, where, {"path", "trust_remote_code"})
    path = reader.optional(table, "path", where, str, "an absolute folder path on the host")
    if path is not None and not path.startswith("/"):
        raise reader.error(f"{where}.path", f"got {path!r}", "an absolute folder path on the host")
    trust = reader.optional(table, "trust_remote_code", where, bool, "true or false")
    return path, bool(trust)


def _host_path(reader: TableReader, table: Mapping[str, Any], key: str, where: str) -> str | None:
    """A path on the host: absolute, or under the remote user's home (`~/...`)."""
    value = reader.optional(table, key, where, str, "a path on the host, /... or ~/...")
    if value is not None and not value.startswith(("/", "~/")):
        raise reader.error(
            join_key(where, key), f"got {value!r}", "a path on the host, /... or ~/..."
        )
    return value


def _regex(reader: TableReader, table: Mapping[str, Any], key: str, where: str) -> str:
    pattern = reader.text(table, key, where)
    try:
        re.compile(pattern)
    except re.error as exc:
        raise reader.error(
            join_key(where, key), f"{pattern!r} is not a regex ({exc})", "a Python regex"
        ) from None
    return pattern


def _paths(reader: TableReader, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = reader.optional(table, key, where, list, "a list of absolute paths")
    if value is None:
        return ()
    if not all(isinstance(item, str) and item.startswith("/") for item in value):
        raise reader.error(join_key(where, key), f"got {value!r}", "a list of absolute paths")
    return tuple(value)


def datasets_table(reader: TableReader, host: Mapping[str, Any], where: str) -> DatasetsConfig:
    """`[hosts.NAME.datasets]`: the root, file names, budgets, guards and alert thresholds."""
    table = reader.table(host, "datasets", where)
    where = f"{where}.datasets"
    reader.only(table, where, {"root", "prompts", "responses", "budget", "budgets", "stall_after_s",
                               "overrun_alert_share", "low_disk_floor_gib", "guard", "guards",
                               "stall_guard_s", "truncation_alert_share"})  # fmt: skip
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
        truncation_alert_share=reader.seconds(
            table, "truncation_alert_share", where, 0.10, DatasetsConfig
        ),
    )


def _disk_floor(reader: TableReader, table: Mapping[str, Any], where: str) -> int:
    """`low_disk_floor_gib`, in bytes, within the protocol's range for the floor."""
    gib = reader.seconds(table, "low_disk_floor_gib", where, 1.0)
    if not in_range(DatasetsConfig, "low_disk_floor_bytes", gib * 2**30):  # inf for 1e300
        _, high = field_range(DatasetsConfig, "low_disk_floor_bytes")
        expected = f"a size in GiB from 0 to {show_number(high / 2**30)}"
        raise reader.error(join_key(where, "low_disk_floor_gib"), f"got {gib:g}", expected)
    return round(gib * 2**30)


def _guard(reader: TableReader, table: Mapping[str, Any], key: str, where: str) -> GuardMode:
    """A budget guard: "alert" (the default) or "stop"."""
    value = reader.optional(table, key, where, str, '"alert" or "stop"') or "alert"
    if value not in ("alert", "stop"):
        raise reader.error(join_key(where, key), f"got {value!r}", '"alert" or "stop"')
    return "stop" if value == "stop" else "alert"
