"""A JSON object from a file someone else wrote (a model's config.json, an export's report).

Read as a peer's file: a regular file only (a FIFO in its place is refused, never waited on), at
most `max_bytes`, and an object or nothing. Every problem is a VocabUsageError of one line that
says what was wrong and what to do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.host.regular_files import open_regular
from agent.pipeline.vocab.errors import VocabUsageError


def read_json_object(path: Path, max_bytes: int, what: str, what_to_do: str) -> dict[str, Any]:
    """The object in `path` (`what` names it in errors); VocabUsageError if it cannot be read."""
    data = _bounded_bytes(path, max_bytes, what, what_to_do)
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise VocabUsageError(
            f"{path} is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); "
            f"{what_to_do}"
        ) from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise VocabUsageError(f"{path} is not valid JSON ({exc}); {what_to_do}") from None
    if not isinstance(value, dict):
        raise VocabUsageError(
            f"{path} holds a JSON {type(value).__name__}, not the object of {what}; {what_to_do}"
        )
    return value


def _bounded_bytes(path: Path, max_bytes: int, what: str, what_to_do: str) -> bytes:
    try:
        with open_regular(path) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise VocabUsageError(f"cannot read {what} {path}: {exc}; {what_to_do}") from None
    if len(data) > max_bytes:
        raise VocabUsageError(
            f"{path} is over {max_bytes:,} bytes, more than {what} holds; {what_to_do}"
        )
    return data
