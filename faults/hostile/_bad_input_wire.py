"""Part (c) of bad_input: hostile lines on the wire to a real agent daemon, through `attach`.

Each bad line is sent with a valid ping right behind it: the bad line must get one clear error
answer (or, for a blank line, none), the ping must still be answered on the same connection,
and the daemon must live on. A connection cut mid-line must not hurt the next one.
"""

from __future__ import annotations

import json
from typing import Any

from agent.protocol import MAX_LINE_BYTES

DROPPED = "dropped"
"""The expected answer to a line the framer skips (a blank one): none at all."""


def _request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"id": request_id, "method": method, "params": params}).encode()


BAD_LINES: tuple[tuple[str, bytes, str], ...] = (
    ("not JSON", b"this is not json", "malformed"),
    ("cut-off JSON", b'{"id": 3, "method": "pi', "malformed"),
    ("a JSON list", b"[1, 2, 3]", "malformed"),
    ("a JSON string", b'"ping"', "malformed"),
    ("JSON null", b"null", "malformed"),
    ("invalid UTF-8", b"\xff\xfe\xfd", "malformed"),
    ("NUL bytes", b"\x00" * 64, "malformed"),
    ("binary junk", bytes(range(11, 256)) * 16, "malformed"),
    ("UTF-8 BOM", b"\xef\xbb\xbf" + _request(4, "ping", {}), "malformed"),
    ("JSON nested 100,000 deep", b"[" * 100_000 + b"]" * 100_000, "malformed"),
    ("no method/result/event", b'{"id": 5}', "malformed"),
    ("a response", b'{"id": 6, "result": {}}', "malformed"),
    ("an event with bad data", b'{"event": "job", "data": {}}', "invalid_params"),
    ("string id", b'{"id": "seven", "method": "ping", "params": {}}', "malformed"),
    ("float id", b'{"id": 7.5, "method": "ping", "params": {}}', "malformed"),
    ("boolean id", b'{"id": true, "method": "ping", "params": {}}', "malformed"),
    ("5,000-digit id", b'{"id": 1' + b"0" * 5000 + b', "method": "ping"}', "malformed"),
    ("unknown method", _request(8, "jobs.nuke", {}), "unknown_method"),
    ("method a number", b'{"id": 9, "method": 42, "params": {}}', "unknown_method"),
    ("lone surrogate in method", b'{"id": 10, "method": "ping\\ud800"}', "unknown_method"),
    ("unknown param", _request(11, "ping", {"at": "noon"}), "invalid_params"),
    ("params a list", b'{"id": 12, "method": "ping", "params": [1]}', "invalid_params"),
    ("param of the wrong type", _request(13, "logs.read", {"name": 5}), "invalid_params"),
    (
        "mutation without idempotency key",
        _request(14, "jobs.stop", {"job_id": "x"}),
        "invalid_params",
    ),  # fmt: skip
    (
        "path outside the deploy roots",
        _request(15, "files.hash", {"paths": ["../../etc/passwd"]}),
        "invalid_params",
    ),  # fmt: skip
    (
        "watch interval too short",
        _request(16, "snapshot.watch", {"interval_s": 0}),
        "invalid_params",
    ),  # fmt: skip
    ("unknown log", _request(17, "logs.read", {"name": "no-such-log"}), "not_found"),
    (
        "unknown protocol version",
        _request(18, "hello", {"protocol_version": 99, "client_version": "x"}),
        "unsupported_version",
    ),  # fmt: skip
    ("line at the size limit", b"x" * MAX_LINE_BYTES, "malformed"),
    ("line over the size limit", b"x" * (MAX_LINE_BYTES + 10), "oversized"),
    ("blank line", b"", DROPPED),
    ("whitespace only", b" \t \r", DROPPED),
)


def answered_by_id(line: bytes, expected: str) -> int | None:
    """The id the answer to a bad line carries (None: the line is no request it could name)."""
    if expected in (DROPPED, "malformed", "oversized"):
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if type(request_id) is int else None


def clear_error(answers: list[dict[str, Any]], expected: str) -> str | None:
    """What is wrong with the answers to one bad line, or None when they are right."""
    if expected == DROPPED:
        return None if not answers else f"a skipped line was answered: {answers}"
    if len(answers) != 1 or "error" not in answers[0]:
        return f"want one error answer, got {answers}"
    error = answers[0]["error"]
    code, message = error.get("code"), error.get("message")
    if not isinstance(message, str) or not message.strip() or "Traceback" in message:
        return f"unclear error message {message!r}"
    return None if code == expected else f"error code {code!r}, want {expected!r}: {message}"
