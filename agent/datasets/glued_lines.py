"""A torn line glued to the record after it, told apart from a record, wherever responses are read.

A write that fails halfway (a full disk) leaves the first bytes of a record with no newline; if
the writer then goes on, its next record is appended right after them, on the same line. Such a
line is corruption, but the record at its end is complete: it must be neither dropped silently
nor counted under the id of the fragment in front of it.

A fragment is a proper prefix of a JSON object, so fragment + record is never valid JSON: every
glued line fails `json.loads`. The fast byte readers do not parse whole lines, so a line they
would accept is first checked for the marks glue always leaves: braces that do not balance
outside the id list, or a second `"output_ids"` key. Only such suspects pay for a full parse.
The record at the end of a glued line is its longest suffix, starting at a `{`, that is one JSON
value (a `{` inside a record never starts one: its closing braces are left over). A `{` right
after a `:` is not taken: it may open a nested object (SGLang's `meta_info` has an `id` and
`completion_tokens` too) of a torn record, and counting that under its own id would be worse than
reporting the line. Before the record, only a whole record is taken (two records that lost the
newline between them); anything else there is fragment, since a torn prefix can end right after
a complete nested object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent.datasets.response_lines import parse_response

_IDS_KEY = b'"output_ids":'
MAX_STARTS = 64
"""Braces tried as the start of the record per line: a real glued line needs a handful; a
hostile line of braces must not cost a parse for each of millions."""
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ResponseLine:
    """One response found on a line: its id, its tokens and its bytes.

    `record` is the line as read for a clean line, and the record alone (no newline) for one
    found in a glued line.
    """

    id: str
    tokens: int
    record: bytes


@dataclass(frozen=True, slots=True)
class LineRecords:
    """What one complete line holds: its responses in order, and the bytes that are no response."""

    responses: tuple[ResponseLine, ...]
    fragment_bytes: int = 0

    @property
    def clean(self) -> bool:
        """One response and nothing else: a normal line."""
        return len(self.responses) == 1 and self.fragment_bytes == 0

    @property
    def glued(self) -> bool:
        """Torn bytes or a second record share the line with a complete response."""
        return bool(self.responses) and not self.clean


def read_line(line: bytes) -> LineRecords:
    """The responses on a complete line; a line with none is all fragment (corrupt)."""
    if not is_suspect(line) or _is_json(line):
        parsed = _parse(line)
        if parsed is not None:
            return LineRecords((ResponseLine(parsed[0], parsed[1], line),))
    body = line.rstrip(b"\r\n")
    responses = _split(body.decode("utf-8", "replace"))
    return LineRecords(tuple(responses), len(body) - sum(len(r.record) for r in responses))


def is_suspect(line: bytes) -> bool:
    """True when a fast reader could take this line for one record though it may hold two."""
    key = line.find(_IDS_KEY)
    if key < 0:
        return False  # no fast reader accepts it: a full parse decides, and rejects any glue
    close = line.find(b"]", line.find(b"[", key))
    if close < 0:
        return True
    head, tail = line[:key], line[close:]
    if _IDS_KEY in tail:
        return True
    return head.count(b"{") + tail.count(b"{") != head.count(b"}") + tail.count(b"}")


def _split(text: str) -> list[ResponseLine]:
    """The responses in a line that is not one JSON value, in order."""
    start, tries = text.find("{", 1), 0
    while start > 0 and tries < MAX_STARTS:
        tries += 1
        found = _whole_response(text, start) if _may_start_record(text, start) else None
        if found is not None:
            whole = _whole_response(text[:start], 0)
            return [whole, found] if whole is not None else [found]
        start = text.find("{", start + 1)
    return []


def _may_start_record(text: str, start: int) -> bool:
    """False for a `{` that follows a key: a nested object, not a record."""
    before = start - 1
    while before >= 0 and text[before] in " \t\r\n":
        before -= 1
    return before < 0 or text[before] != ":"


def _whole_response(text: str, start: int) -> ResponseLine | None:
    """The response that `text[start:]` is, all of it, or None."""
    try:
        _, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if end != len(text):
        return None
    record = text[start:].encode()
    parsed = _parse(record)
    return ResponseLine(parsed[0], parsed[1], record) if parsed is not None else None


def _parse(data: bytes) -> tuple[str, int] | None:
    try:
        return parse_response(data)
    except RecursionError:  # nested too deep to be a record
        return None


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True
