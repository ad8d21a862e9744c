"""Typed look-ups in a TOML document that fail naming the file, the key and what was expected."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from agent.protocol import (
    DatasetsConfig,
    in_range,
    range_text,
    show_number,
)
from console.config.hosts import ConfigError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TableReader:
    """Typed look-ups in a TOML document that fail with the file, key and expectation."""

    path: Path

    def error(self, key: str, problem: str, expected: str) -> ConfigError:
        """The error for `key`: what is wrong with it and what was expected."""
        return ConfigError(f"{self.path}: {key}: {problem}; expected {expected}")

    def only(self, table: Mapping[str, Any], where: str, allowed: set[str]) -> None:
        """Refuse a key that is not one of `allowed` (a typo is never ignored)."""
        for key in table:
            if key not in allowed:
                full = join_key(where, key)
                raise self.error(full, "unknown key", "one of " + ", ".join(sorted(allowed)))

    def table(
        self, parent: Mapping[str, Any], key: str, where: str, *, required: bool = True
    ) -> Mapping[str, Any]:
        """The table at `key`; {} when it is absent and not required."""
        full = join_key(where, key)
        if key not in parent and not required:
            return {}
        value = self.optional(parent, key, where, dict, "a table")
        if value is None:
            raise self.error(full, "missing", "a table")
        return value

    def text(self, table: Mapping[str, Any], key: str, where: str, default: str = "") -> str:
        """A non-empty string; `default` when absent (absent with no default is an error)."""
        value = self.optional(table, key, where, str, "a string")
        if value is None and not default:
            raise self.error(join_key(where, key), "missing", "a string")
        if value == "":
            raise self.error(join_key(where, key), "empty", "a non-empty string")
        return value if value is not None else default

    def count(
        self, table: Mapping[str, Any], key: str, where: str, field: str = "budget"
    ) -> int | None:
        """A budget in tokens: positive, within the protocol's range for `DatasetsConfig.field`."""
        value = self.optional(table, key, where, int, "a whole number of tokens")
        if value is not None and value <= 0:
            raise self.error(join_key(where, key), f"got {value}", "a positive number of tokens")
        if value is not None:
            self.in_range(value, join_key(where, key), DatasetsConfig, "a number of tokens", field)
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
            raise self.error(join_key(where, key), f"got {describe(value)}", f"{_unit(key)} >= 0")
        if owner is not None:
            unit = "a number of seconds" if key.endswith("_s") else "a number"
            self.in_range(value, join_key(where, key), owner, unit)
        return float(value)

    def optional(
        self, table: Mapping[str, Any], key: str, where: str, kind: type[T], expected: str
    ) -> T | None:
        """The value at `key` if it is a `kind` (a bool is never an int), None when absent."""
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(join_key(where, key), f"got {describe(value)}", expected)
        return value


def _unit(key: str) -> str:
    """What a number under `key` counts, by its suffix: seconds, GiB, or a plain number."""
    if key.endswith("_s"):
        return "a number of seconds"
    return "a size in GiB" if key.endswith("_gib") else "a number"


def join_key(where: str, key: str) -> str:
    """The dotted name of `key` inside the table at `where`."""
    return f"{where}.{key}" if where else key


def describe(value: Any) -> str:
    """A TOML value as a person would name it in an error: `the string 'x'`, `a table`."""
    names: dict[type, Callable[[Any], str]] = {
        str: lambda v: f"the string {v!r}",
        bool: lambda v: f"the boolean {str(v).lower()}",
        int: lambda v: f"the number {v}",
        float: lambda v: f"the number {v}",
        dict: lambda v: "a table",
        list: lambda v: "a list",
    }
    return names.get(type(value), lambda v: type(v).__name__)(value)
