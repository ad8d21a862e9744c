"""What applying one pipeline config over another would change, in short lines for people.

The agent runs one config; a console may hold another. Looking never applies it: the
agent answers hello with these lines, and `pipeline.apply` names them when a person applies it
on purpose. Pure, and secret-free: a webhook URL, a job's argv and its env values are only ever
said to have changed, never shown.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping
from typing import Any

from agent.protocol.config import DatasetsConfig, JobSpec, NotifyConfig, PipelineConfig

HIDDEN_FIELDS = frozenset({"notify.url"})
"""Fields shown only as changed: their value may be a secret."""


def pipeline_differences(running: PipelineConfig, wanted: PipelineConfig) -> tuple[str, ...]:
    """What changes if `wanted` replaces `running`, one line each; () when they are the same.

    `datasets.root: /data/a → /data/b`, `jobs added: vocab`, `job inference: argv changed`,
    `notify.url changed`. Every field is compared, so no difference goes unnamed.
    """
    if running == wanted:
        return ()
    return tuple(_fields("", running, wanted))


def _fields(prefix: str, old: Any, new: Any) -> list[str]:
    lines: list[str] = []
    for each in dataclasses.fields(old):
        before, after = getattr(old, each.name), getattr(new, each.name)
        if before != after:
            lines += _difference(prefix + each.name, before, after)
    return lines


def _difference(path: str, old: Any, new: Any) -> list[str]:
    if path == "jobs":
        return _jobs(old, new)
    if old is None or new is None:
        present = new if old is None else old
        if dataclasses.is_dataclass(present):
            word = "added" if old is None else "removed"
            return [f"{path} {word} ({_summary(present)})"]
    elif dataclasses.is_dataclass(old):
        return _fields(path + ".", old, new)
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return _entries(path, old, new)
    if path in HIDDEN_FIELDS:
        return [f"{path} changed"]
    return [f"{path}: {shown(old)} → {shown(new)}"]


def _entries(path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """A table of values (budgets per dataset, external patterns): each key that differs."""
    keys = sorted(old.keys() | new.keys())
    return [
        f"{path}.{key}: {shown(old.get(key))} → {shown(new.get(key))}"
        for key in keys
        if old.get(key) != new.get(key)
    ]


def _jobs(old: Mapping[str, JobSpec], new: Mapping[str, JobSpec]) -> list[str]:
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    lines = [f"jobs added: {', '.join(added)}"] if added else []
    lines += [f"jobs removed: {', '.join(removed)}"] if removed else []
    for name in sorted(old.keys() & new.keys()):
        changed = [
            each.name
            for each in dataclasses.fields(JobSpec)
            if getattr(old[name], each.name) != getattr(new[name], each.name)
        ]
        if changed:
            lines.append(f"job {name}: {', '.join(changed)} changed")
    return lines


def _summary(value: object) -> str:
    if isinstance(value, DatasetsConfig):
        return f"root {value.root}"
    if isinstance(value, NotifyConfig):
        return url_without_secret(value.url)
    return type(value).__name__


def url_without_secret(url: str) -> str:
    """Scheme and host only: a webhook's path or query is often its secret."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}/…"


def without_secrets(pipeline: PipelineConfig) -> PipelineConfig:
    """`pipeline` fit for a record: the webhook's URL cut to its host, job env values hidden."""
    notify = pipeline.notify
    jobs = {
        name: dataclasses.replace(
            spec, env=dict.fromkeys(spec.env, "…"), argv=argv_without_secrets(spec.argv)
        )
        for name, spec in pipeline.jobs.items()
    }
    return dataclasses.replace(
        pipeline,
        jobs=jobs,
        notify=dataclasses.replace(notify, url=url_without_secret(notify.url)) if notify else None,
    )


SECRET_NAME_ENDS = ("key", "keys", "token", "password", "passwd", "secret", "secrets")
"""A flag (`--api-key`, `--hf-token`) or an environment name (`HF_TOKEN=`) ending so holds a
secret; one ending in `-file` or `-path` names where a secret is, which is no secret."""


def argv_without_secrets(argv: tuple[str, ...]) -> tuple[str, ...]:
    """`argv` fit for a record: every secret's value hidden.

    `--api-key K`, `--api-key=K` and `env HF_TOKEN=K` alike; a flag right after a secret flag
    (`--api-key --token K`) is read as a flag, not as the first one's value.
    """
    hidden: list[str] = []
    for arg in argv:
        before = hidden[-1] if hidden else ""
        if _is_flag(before) and "=" not in before and _secret(before) and not arg.startswith("-"):
            hidden.append("…")
            continue
        name, equals, _ = arg.partition("=")
        hidden.append(f"{name}=…" if equals and _secret(name) else arg)
    return tuple(hidden)


def _is_flag(arg: str) -> bool:
    return arg.startswith("-")


def _secret(name: str) -> bool:
    """A flag or an environment variable's name that holds a secret."""
    words = name.lower().lstrip("-").replace("_", "-")
    return (
        bool(words) and " " not in words and "/" not in words and words.endswith(SECRET_NAME_ENDS)
    )


def shown(value: object) -> str:
    """A config value in a line: none, true/false, 10,000,000, a list joined by commas."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return "[" + ", ".join(map(shown, value)) + "]"
    return str(value)
