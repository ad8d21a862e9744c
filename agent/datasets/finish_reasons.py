"""The finish reason a response record gives, in each form the files hold it.

The runner writes `"finish_reason": "length"`; a script that kept SGLang's answer has its object,
`{"type": "length", ...}`, at the top or only under `meta_info`. Read from the fields a line
reader already decoded: no parse of its own, a few dict look-ups per line, so the scanner's rate
does not depend on it. It reads no file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LENGTH = "length"
"""The reason of an answer cut at max_new_tokens."""


def finish_reason(fields: Mapping[str, Any]) -> str | None:
    """The record's reason: its own string, SGLang's object's type, or its meta_info's; else None."""
    reason = fields.get("finish_reason")
    if reason is None:
        meta = fields.get("meta_info")
        reason = meta.get("finish_reason") if isinstance(meta, dict) else None
    if isinstance(reason, dict):
        reason = reason.get("type")
    return reason if isinstance(reason, str) and reason else None


def cut_at_length(fields: Mapping[str, Any]) -> bool:
    """True when the answer stopped at max_new_tokens instead of ending on its own."""
    return finish_reason(fields) == LENGTH
