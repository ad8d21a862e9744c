"""The files a training run was configured with, read within bounds.

A config or data path on a job's command line is a file someone else wrote: it may be missing,
huge, a FIFO, not UTF-8, not a mapping, or hold `max_steps: -5`. Each reader here takes a size
and time bound and raises UnreadableConfigError with the reason in words, which becomes the panel's
"total unknown: ..." rather than a crash or a stalled snapshot. PyYAML is used when the host has
it (SpecForge and speculators both need it); otherwise a reader of plain nested `key: value`
blocks, enough for the few keys the total comes from.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from agent.host.regular_files import NotRegularFileError, open_regular
from agent.probes.values import MAX_TEXT_CHARS, is_small_number

MAX_CONFIG_BYTES = 1024 * 1024
MAX_DATA_BYTES = 4 * 1024**3
MAX_DIR_ENTRIES = 2_000_000
COUNT_BUDGET_S = 5.0
"""What counting a run's data may take, once per job, on the snapshot's thread."""
MAX_COUNT = 10**9
"""Past any real run's steps, epochs or batch size: a larger figure is a file that lies."""
_CHUNK = 1024 * 1024
MAX_QUOTED_CHARS = 60


class UnreadableConfigError(Exception):
    """Why a configured figure cannot be had, in words for the panel."""


def read_mapping(path: Path) -> dict[str, Any]:
    """A JSON or YAML config file's top-level mapping."""
    text = _read_text(path)
    try:
        value = json.loads(text) if path.suffix == ".json" else _yaml(text)
    except (ValueError, RecursionError) as exc:
        raise UnreadableConfigError(
            f"{path} is not valid {_kind(path)}: {str(exc)[:120]}"
        ) from None
    if not isinstance(value, dict):
        raise UnreadableConfigError(f"{path} holds no mapping at its top")
    return value


def _kind(path: Path) -> str:
    return "JSON" if path.suffix == ".json" else "YAML"


def _read_text(path: Path) -> str:
    with _opened(
        path, MAX_CONFIG_BYTES, f"over the {MAX_CONFIG_BYTES:,} a config may be"
    ) as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise UnreadableConfigError(f"{path} grew past {MAX_CONFIG_BYTES:,} bytes while read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableConfigError(f"{path} is not UTF-8 text") from None


@contextlib.contextmanager
def _opened(path: Path, max_bytes: int, too_big: str) -> Iterator[BinaryIO]:
    """`path` open for reading if it is a regular file of at most `max_bytes` (never blocks)."""
    try:
        handle = open_regular(path)
    except NotRegularFileError:
        raise UnreadableConfigError(f"{path} is not a regular file") from None
    except OSError as exc:
        raise UnreadableConfigError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise UnreadableConfigError(f"{path} is {size:,} bytes, {too_big}")
        yield handle


def _yaml(text: str) -> Any:
    try:  # not every host has it, and the agent imports only the stdlib at start
        yaml = importlib.import_module("yaml")
    except ImportError:
        return plain_yaml(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


def plain_yaml(text: str) -> dict[str, Any]:
    """Nested `key: value` blocks: the subset of YAML a host without PyYAML can still read.

    Lists, flow collections and anchors are skipped or left as their text: no total is read
    from them.
    """
    root: dict[str, Any] = {}
    parents: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        line = _uncommented(raw)
        key, sep, value = line.strip().partition(":")
        if not line.strip() or line.lstrip().startswith(("#", "-")) or not sep:
            continue
        indent = len(line) - len(line.lstrip())
        while parents[-1][0] >= indent:
            parents.pop()
        if value.strip():
            parents[-1][1][key.strip().strip("'\"")] = _scalar(value.strip())
        else:
            child: dict[str, Any] = {}
            parents[-1][1][key.strip().strip("'\"")] = child
            parents.append((indent, child))
    return root


def _uncommented(line: str) -> str:
    """The line without its ` # comment`, a `#` inside quotes kept."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index].rstrip()
    return line.rstrip()


def _scalar(text: str) -> Any:
    if text[:1] in "'\"" and text[-1:] == text[:1] and len(text) > 1:
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def whole(value: Any, name: str, source: str = "") -> int:
    """A positive whole number from a config value, read as the trainers' pydantic reads it.

    `name` is the setting (`training.max_steps`) and `source` the file it is in, for the reason.
    """
    where = _where(name, value, source)
    if isinstance(value, str) and is_small_number(value.strip()):
        value = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        value = int(value)  # as the trainers' pydantic configs take 2.0, "2" and true
    if not isinstance(value, int) or value <= 0:
        raise UnreadableConfigError(f"{where} is not a positive whole number")
    if value > MAX_COUNT:
        raise UnreadableConfigError(f"{where} is past any real run's {MAX_COUNT:,}")
    return int(value)


def described(value: Any) -> str:
    """A config value as a reason quotes it: never longer than a line.

    A value may be anything a file held: a YAML alias bomb's nested lists repr to gigabytes.
    """
    if isinstance(value, str):
        return repr(value[:MAX_QUOTED_CHARS] + ("…" if len(value) > MAX_QUOTED_CHARS else ""))
    if isinstance(value, int) and abs(value) >= 10**MAX_QUOTED_CHARS:
        return "a number of over 60 digits"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return f"a {type(value).__name__}"


def text_value(value: Any, name: str, source: str = "") -> str:
    """A config value that must be a path or a name: a string of at most MAX_TEXT_CHARS."""
    if isinstance(value, str) and len(value) <= MAX_TEXT_CHARS:
        return value
    raise UnreadableConfigError(f"{_where(name, value, source)} is not a path")


def _where(name: str, value: Any, source: str) -> str:
    """`name = value in file`, as a reason begins."""
    return f"{name} = {described(value)}" + (f" in {source}" if source else "")


def count_lines(path: Path) -> int:
    """Lines of a data file (JSONL: one record each), within MAX_DATA_BYTES and the time budget."""
    deadline, lines, last = time.monotonic() + COUNT_BUDGET_S, 0, b"\n"
    with _opened(path, MAX_DATA_BYTES, f"past the {MAX_DATA_BYTES:,} counted") as handle:
        while chunk := handle.read(_CHUNK):
            lines, last = lines + chunk.count(b"\n"), chunk[-1:]
            if time.monotonic() > deadline:
                raise UnreadableConfigError(f"counting {path} took over {COUNT_BUDGET_S:.0f} s")
    return lines + (last != b"\n")


def count_files(root: Path, suffixes: tuple[str, ...]) -> int:
    """Files under `root` whose names end in one of `suffixes` (`root` itself when a file)."""
    if root.is_file():
        return 1
    if not root.is_dir():
        raise UnreadableConfigError(f"{root}: no such folder")
    deadline, seen, found = time.monotonic() + COUNT_BUDGET_S, 0, 0
    for _folder, _subfolders, names in os.walk(root):
        seen += len(names) + len(_subfolders)
        found += sum(name.endswith(suffixes) for name in names)
        if seen > MAX_DIR_ENTRIES or time.monotonic() > deadline:
            raise UnreadableConfigError(f"{root} holds too much to count ({seen:,} entries so far)")
    return found
