"""Writing eagle-console.toml text: the demo's config and the recipe's job blocks, one way.

Only what those hold: strings, whole numbers, floats, booleans and lists of them, and one level
of inline table (a job's env). JSON's escapes are TOML's for basic strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping


def toml_value(value: object) -> str:
    """One value as TOML."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{key} = {toml_value(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)


def quoted(path: object) -> str:
    """A TOML basic string."""
    return json.dumps(str(path))


def job_blocks(host: str, jobs: Mapping[str, Mapping[str, object]]) -> list[str]:
    """`[hosts.HOST.jobs.NAME]` tables, one per job, a blank line after each."""
    lines = []
    for name, table in jobs.items():
        lines.append(f"[hosts.{host}.jobs.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
        lines.append("")
    return lines
