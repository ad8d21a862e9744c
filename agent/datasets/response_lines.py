"""Reading one `raw_responses.jsonl` line: its id and completion tokens, fast.

The runner writes `{"id":...,"output_ids":[...],"completion_tokens":N,...}`, compact and in that
order; for such lines the id and the count are read straight from the bytes (a line of 3,500 tokens is
~25 KB, and `json.loads` on every one caps a cold scan near 110 MB/s). Any line that does not
have that exact shape goes through `json.loads`, so files from other scripts are read right.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FAST_HEAD = re.compile(rb'^\{"id":("(?:[^"\\]|\\.)*"|-?\d+),"output_ids":\[')
_COMPLETION = re.compile(rb',"completion_tokens":(\d+)[,}]')
_ID_BYTES = b"0123456789,- "


def parse_response(line: bytes) -> tuple[str, int] | None:
    """(id, completion tokens) of a response line, or None if the line is not a response."""
    fast = _parse_fast(line)
    if fast is not None:
        return fast
    try:
        record = json.loads(line)
    except ValueError:
        return None
    tokens = response_tokens(record)
    return (str(record["id"]), tokens) if tokens is not None else None


def response_tokens(record: Any) -> int | None:
    """Completion tokens of a decoded record: `completion_tokens`, else `len(output_ids)`."""
    if not isinstance(record, dict) or "id" not in record:
        return None
    tokens = record.get("completion_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return tokens
    output_ids = record.get("output_ids")
    return len(output_ids) if isinstance(output_ids, list) else None


def _parse_fast(line: bytes) -> tuple[str, int] | None:
    line = line.rstrip(b"\r\n")
    if not line.endswith(b"}"):
        return None
    head = _FAST_HEAD.match(line)
    if head is None:
        return None
    close = line.find(b"]", head.end())
    tokens = _COMPLETION.match(line, close + 1) if close > 0 else None
    if tokens is None or line[head.end() : close].translate(None, _ID_BYTES):
        return None  # not a plain list of ints: a torn line glued to the next, say
    raw_id = head[1]
    response_id = json.loads(raw_id) if raw_id.startswith(b'"') else int(raw_id)
    return str(response_id), int(tokens[1])
