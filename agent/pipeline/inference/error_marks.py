"""`--retry-errors`: clearing the permanent marks in errors.jsonl, all or by kind.

A prompt marked `permanent` is skipped by every later run. When a mark was a mistake (a
tokenizer since fixed, a context length since raised, a refusal an older runner took for the
prompt's), the user clears it with a flag instead of editing the file. The cleared lines move to
`errors.cleared.jsonl`, so nothing is lost; errors.jsonl is replaced atomically.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from agent.datasets.line_follower import json_object

KINDS = ("too_long", "empty", "tokenize", "truncated", "rejected")
"""Why a prompt failed for good, as errors.jsonl records it and --retry-errors names it."""
_TOO_LONG = re.compile(
    r"longer than the model's context length|exceeds the model's maximum context length|"
    r"exceeds the maximum allowed length|"  # SGLang: tokenizer_manager.py:1331-1376, utils.py:259
    r"maximum context length is \d+ tokens|"  # vLLM, every version: renderers/params.py:405,544
    r"exceeds model's maximum context length|"  # vLLM get_max_tokens, api_utils.py:247-251
    r"max_tokens must be at least 1, got 0\b",  # vLLM, a prompt exactly at the context
    re.I,
)
"""A prompt too long for the server's context, in each server's words.

vLLM 0.34.0 (0.33.0 alike): a prompt past the context is "This model's maximum context length
is M tokens. However, your prompt contains N input tokens, which exceeds this limit even
without any output tokens." (renderers/params.py:535-552; "… contains N characters …" before
tokenizing, :398-412); a prompt of exactly M tokens leaves 0 to generate (entrypoints/serve/
utils/api_utils.py:234-270) and SamplingParams refuses it: "max_tokens must be at least 1, got
0." (sampling_params.py:695-700). Older vLLM (0.20 and before) refused a prompt whose tokens plus
max_tokens passed the context: "This model's maximum context length is M tokens. However, you
requested T tokens (P in the messages, K in the completion)."; 0.33 and 0.34 clamp max_tokens
instead. Only "max_tokens=N cannot be greater than max_model_len=M" (params.py:272-284) is no
prompt's: every request of the run is refused, and rejections.py stops the run for it."""
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
    """A mark's kind: as written, or read from the reason of a line older runners wrote.

    A `rejected` mark is read again from its reason: older runners wrote vLLM's too-long
    refusals as `rejected`, and `--retry-errors too_long` must clear those too.
    """
    kind = record.get("kind")
    if isinstance(kind, str) and kind in KINDS and kind != "rejected":
        return kind
    return prompt_kind(str(record.get("reason", "")))


def clear_permanent_marks(path: Path, kinds: tuple[str, ...]) -> int:
    """Move the permanent marks of `kinds` out of errors.jsonl; returns how many were moved."""
    if not path.exists():
        return 0
    kept: list[bytes] = []
    cleared: list[bytes] = []
    for line in path.read_bytes().splitlines(keepends=True):
        record = json_object(line)
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
