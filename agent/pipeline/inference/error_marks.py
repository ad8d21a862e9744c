"""`--retry-errors`: clearing the permanent marks in errors.jsonl, all or by kind.

A prompt marked `permanent` is skipped by every later run. When a mark was a mistake (a
tokenizer since fixed, a context length since raised, a refusal an older runner took for the
prompt's), the user clears it with a flag instead of editing the file. The cleared lines move to
`errors.cleared.jsonl`, so nothing is lost; errors.jsonl is replaced atomically.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

KINDS = ("too_long", "empty", "tokenize", "truncated", "rejected")
"""Why a prompt failed for good, as errors.jsonl records it and --retry-errors names it."""
_TOO_LONG = re.compile(
    r"longer than the model's context length|exceeds the model's maximum context length|"
    r"exceeds the maximum allowed length",
    re.I,
)
_EMPTY = re.compile(r"cannot be empty|should be provided", re.I)


def prompt_kind(message: str) -> str:
    """The errors.jsonl `kind` of a prompt-level refusal or failure reason."""
    if _TOO_LONG.search(message):
        return "too_long"
    if _EMPTY.search(message):
        return "empty"
    if message.startswith("cannot tokenize"):
        return "tokenize"
    if "max_new_tokens; dropped by --drop-truncated" in message:
        return "truncated"
    return "rejected"


def error_mark(prompt_id: str, reason: str, permanent: bool, status: int | None) -> dict[str, Any]:
    """One errors.jsonl line: a prompt that failed, why, and whether later runs skip it."""
    return {
        "id": prompt_id,
        "reason": reason,
        "status": status,
        "permanent": permanent,
        "kind": prompt_kind(reason) if permanent else "transient",
        "ts": time.time(),
    }


def parse_retry_errors(text: str) -> tuple[str, ...]:
    """`all` or a comma list of kinds; raises ValueError naming the kinds there are."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names == ("all",):
        return KINDS
    unknown = [name for name in names if name not in KINDS]
    if unknown or not names:
        raise ValueError(
            f"unknown kind {unknown[0] if unknown else text!r}; use all or any of {', '.join(KINDS)}"
        )
    return names


def record_kind(record: dict[str, Any]) -> str:
    """A mark's kind: as written, or read from the reason of a line older runners wrote."""
    kind = record.get("kind")
    return (
        kind
        if isinstance(kind, str) and kind in KINDS
        else prompt_kind(str(record.get("reason", "")))
    )


def clear_permanent_marks(path: Path, kinds: tuple[str, ...]) -> int:
    """Move the permanent marks of `kinds` out of errors.jsonl; returns how many were moved."""
    if not path.exists():
        return 0
    kept: list[bytes] = []
    cleared: list[bytes] = []
    for line in path.read_bytes().splitlines(keepends=True):
        record = _record(line)
        matches = record is not None and record.get("permanent") and record_kind(record) in kinds
        (cleared if matches else kept).append(line if line.endswith(b"\n") else line + b"\n")
    if cleared:
        with path.with_name("errors.cleared.jsonl").open("ab") as handle:
            handle.writelines(cleared)
            handle.flush()
            os.fsync(handle.fileno())
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(b"".join(kept))
        with tmp.open("rb") as handle:
            os.fsync(handle.fileno())
        tmp.replace(path)
    return len(cleared)


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
