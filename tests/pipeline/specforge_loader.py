"""Reading an exported conversation file the way SpecForge's training reads it, to test the export.

From sgl-project/SpecForge @a6b6b023: `specforge/data/preprocessing.py build_eagle3_dataset` needs
a `conversations` column and drops `id`; `specforge/data/parse.py GeneralParser.parse` normalizes
each message (`role` or `from`, `content` or `value`; human -> user, gpt -> assistant), takes a
leading system message, drops leading non-user messages and truncates the conversation at the
first assistant that does not follow a user (or tool) message, with only a warning;
`scripts/conversation_validation.py validate_conversation` refuses empty content, roles other
than system/user/assistant, and any order but system*, then user and assistant in turn.
Written from those facts for the tests; none of SpecForge's code is copied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class SpecForgeRefusalError(AssertionError):
    """SpecForge would refuse or silently cut this row."""


def load_rows(path: Path) -> list[list[dict[str, str]]]:
    """Every row's conversation, as the parser would render it; raises if one would be cut."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if not isinstance(row, dict) or "conversations" not in row:
            raise SpecForgeRefusalError(f"line {number}: no conversations column")
        if not isinstance(row.get("id"), str) or not row["id"]:
            raise SpecForgeRefusalError(f"line {number}: id must be a non-empty string")
        if set(row) != {"id", "conversations"}:
            raise SpecForgeRefusalError(f"line {number}: extra columns {sorted(set(row))}")
        rows.append(_parse(number, row["conversations"]))
    return rows


def _parse(number: int, conversation: Any) -> list[dict[str, str]]:
    if not isinstance(conversation, list) or not conversation:
        raise SpecForgeRefusalError(f"line {number}: conversations must be a non-empty list")
    messages = [_normalize(number, m) for m in conversation]
    kept = messages[:1] if messages[0]["role"] == "system" else []
    rest = messages[len(kept) :]
    if not rest or rest[0]["role"] != "user":
        raise SpecForgeRefusalError(f"line {number}: the first turn after system is not user")
    expected = "user"
    for index, message in enumerate(rest):
        if message["role"] != expected:
            raise SpecForgeRefusalError(f"line {number}: message {index} cut: {message['role']}")
        expected = "assistant" if expected == "user" else "user"
    if rest[-1]["role"] != "assistant":
        raise SpecForgeRefusalError(f"line {number}: does not end with an assistant turn")
    return messages


def _normalize(number: int, message: Any) -> dict[str, str]:
    if not isinstance(message, dict):
        raise SpecForgeRefusalError(f"line {number}: a message is not an object")
    role = message.get("role", message.get("from", ""))
    content = message.get("content") or message.get("value") or ""
    role = {"human": "user", "gpt": "assistant"}.get(str(role), str(role))
    if role not in ("system", "user", "assistant"):
        raise SpecForgeRefusalError(f"line {number}: unsupported role {role!r}")
    if not isinstance(content, str) or not content.strip():
        raise SpecForgeRefusalError(f"line {number}: empty {role} content")
    return {"role": role, "content": content}
