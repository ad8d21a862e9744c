"""What a `raw_responses.jsonl` line is: the one definition the agent, the runner and vocab share.

A response line is a JSON object, at most MAX_LINE_BYTES long, with
- `id`: a string of at most MAX_ID_CHARS characters, or an integer (|id| < 10**18);
- `output_ids`: a list of token ids, each an integer from 0 (of at most 4,300 digits, as JSON);
- `completion_tokens` (optional; null counts as absent): an integer from 0 to MAX_RESPONSE_TOKENS.
Its tokens are `completion_tokens` when present, else `len(output_ids)`. Anything else — too deep
to parse, not UTF-8, a negative or absurd count, ids that are not token ids — is not a response:
a corrupt line, counted and reported by its reader, never guessed at.

The runner writes `{"id":...,"output_ids":[...],"completion_tokens":N,...}` compactly and in that
order (other scripts often in json.dumps' default layout, with ", " and ": "); for such lines the
id list (the bulk of a line: ~25 KB for 3,500 tokens) is checked against JSON's grammar straight
from the bytes (`id_lists`) and only the small rest goes through `json.loads`, which would
otherwise cap a cold scan near 100 MB/s. The fast path accepts only what the full check accepts,
with the same answer; anything unusual takes the full check. `read_fast` reads a line where it
lies in a larger block, so that a reader of whole blocks (`response_blocks`) copies no line.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agent.datasets.id_lists import MAX_TOKEN_ID_DIGITS as MAX_TOKEN_ID_DIGITS
from agent.datasets.id_lists import IdLists

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The read window: a longer line is corrupt, whatever it holds (~2M tokens fit in one)."""
MAX_RESPONSE_TOKENS = 2**23
"""More completion tokens than any line within MAX_LINE_BYTES can hold ids for."""
MAX_ID_CHARS = 1024
MAX_INT_ID = 10**18

_FAST_HEAD = re.compile(
    rb'\{"id": ?("(?:[^"\\\x00-\x1f]|\\.)*"|-?(?:0|[1-9][0-9]{0,17})), ?"output_ids": ?\['
)
"""The head of the runner's compact lines, and of json.dumps' default layout (", " and ": ")."""
_ABSENT = object()
_QUOTE = ord('"')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class ResponseLine:
    """A valid response line: its id, its tokens and its output ids."""

    id: str
    tokens: int
    output_ids: bytes | list[int]
    """As the line had them: the bytes between the brackets (fast path) or the decoded list."""
    fields: dict[str, Any] = field(default_factory=dict, compare=False)
    """The record's other fields (finish_reason, prompt_tokens, meta_info...), as JSON read them."""

    def ids_text(self) -> bytes:
        """`b"5,6,7"`: what `numpy.fromstring(..., sep=",")` reads (b"" for no ids)."""
        ids = self.output_ids
        return ids if isinstance(ids, bytes) else ",".join(map(str, ids)).encode()

    def ids(self) -> list[int]:
        """The output ids as a list of ints."""
        ids = self.output_ids
        if isinstance(ids, list):
            return ids
        return [int(token) for token in ids.split(b",")] if ids.strip() else []


def parse_response(line: bytes) -> tuple[str, int] | None:
    """(id, tokens) of a response line, or None if the line is not a response."""
    parsed = parse_response_line(line)
    return (parsed.id, parsed.tokens) if parsed is not None else None


def parse_response_line(line: bytes) -> ResponseLine | None:
    """The response on `line` (a trailing newline is allowed), or None if it is not one."""
    line = line.rstrip(b"\r\n")
    if len(line) > MAX_LINE_BYTES:
        return None
    fast = _parse_fast(line)
    if fast is not None:
        return fast
    checked = _parse_slow(line)
    return checked if isinstance(checked, ResponseLine) else None


def why_not_response(line: bytes) -> str:
    """Why `line` is not a response, in a few words (for a line `parse_response` refused)."""
    line = line.rstrip(b"\r\n")
    if len(line) > MAX_LINE_BYTES:
        return f"a line of {len(line):,} bytes, longer than the {MAX_LINE_BYTES:,}-byte limit"
    checked = _parse_slow(line)
    return checked if isinstance(checked, str) else "not a response"


def response_tokens(record: Any) -> int | None:
    """Tokens of a decoded record, or None if it is not a valid response."""
    checked = check_record(record)
    return checked.tokens if isinstance(checked, ResponseLine) else None


def check_record(record: Any) -> ResponseLine | str:
    """The response a decoded JSON value holds, or why it holds none."""
    if not isinstance(record, dict):
        return f"a JSON {_json_type(record)}, not an object"
    response_id = _check_id(record.get("id", _ABSENT))
    if not isinstance(response_id, tuple):
        return response_id
    ids = record.get("output_ids", _ABSENT)
    if not isinstance(ids, list):
        return (
            "no output_ids list" if ids is _ABSENT else f"output_ids is {_short(ids)}, not a list"
        )
    bad = next((i for i in ids if type(i) is not int or i < 0), _ABSENT)
    if bad is not _ABSENT:
        return f"output_ids holds {_short(bad)}, not a token id (an integer from 0)"
    tokens = _tokens(record.get("completion_tokens"), len(ids))
    if isinstance(tokens, str):
        return tokens
    rest = {key: value for key, value in record.items() if key not in ("id", "output_ids")}
    return ResponseLine(response_id[0], tokens, ids, rest)


def _parse_slow(line: bytes) -> ResponseLine | str:
    try:
        record = json.loads(line.decode())
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except RecursionError:
        return "JSON nested too deeply to read"
    except ValueError as exc:
        return f"not JSON ({str(exc).split(':')[0]})"
    return check_record(record)


def _check_id(value: Any) -> tuple[str] | str:
    if value is _ABSENT:
        return "no id"
    if isinstance(value, str):
        return (value,) if len(value) <= MAX_ID_CHARS else f"an id of {len(value):,} characters"
    if type(value) is int and -MAX_INT_ID < value < MAX_INT_ID:
        return (str(value),)
    return f"id is {_short(value)}, not a string or an integer below 10**18"


def _tokens(value: Any, id_count: int) -> int | str:
    if value is None:  # absent or null: the ids count
        value = id_count
    if type(value) is int and 0 <= value <= MAX_RESPONSE_TOKENS:
        return value
    return f"completion_tokens is {_short(value)}, not a count from 0 to {MAX_RESPONSE_TOKENS:,}"


class FastLine(NamedTuple):
    """A response read where its line lies in a block: its id, its tokens and where its ids are."""

    id: str
    tokens: int
    ids_start: int
    ids_end: int
    """Where the id list lies in the block, its brackets excluded."""
    compacted: bytes | None
    """The id list made compact, for a line in json.dumps' default layout (", ")."""
    fields: dict[str, Any]
    """The record's other fields, as JSON read them."""

    def ids_text(self, data: bytes) -> bytes:
        """`b"5,6,7"`: the ids, compact, out of the block `data` the line was read from."""
        return data[self.ids_start : self.ids_end] if self.compacted is None else self.compacted


_fast_line = functools.partial(tuple.__new__, FastLine)
"""FastLine(*fields) without the Python frame of NamedTuple's __new__ (a line is ~10 us)."""


def read_fast(lists: IdLists, start: int, end: int) -> FastLine | None:
    """The response on the line `lists.data[start:end]`; None means "take the full check".

    Only the runner's own layout and json.dumps' default one are read here, from the bytes.
    """
    data = lists.data
    head = _FAST_HEAD.match(data, start, end)
    if head is None:
        return None
    ids_start = head.end()
    close, compacted = lists.end_of(ids_start), None
    if close < 0:
        close, compacted = _spaced_list(data, ids_start, end)
    rest = _rest_of_object(data, close + 1, end) if close >= 0 else None
    if rest is None:
        return None
    tokens = rest.get("completion_tokens")
    if type(tokens) is not int or not 0 <= tokens <= MAX_RESPONSE_TOKENS:  # else: as it says
        count = 0 if tokens is not None else _id_count(data, ids_start, close, compacted)
        tokens = _tokens(tokens, count)
    response_id = _head_id(head[1])
    if isinstance(tokens, str) or response_id is None:
        return None
    return _fast_line((response_id, tokens, ids_start, close, compacted, rest))


def _parse_fast(line: bytes) -> ResponseLine | None:
    fast = read_fast(IdLists(line), 0, len(line))
    if fast is None:
        return None
    return ResponseLine(fast.id, fast.tokens, fast.ids_text(line), fast.fields)


def _id_count(data: bytes, start: int, close: int, compacted: bytes | None) -> int:
    if compacted is not None:
        return compacted.count(b",") + 1 if compacted else 0
    return data.count(b",", start, close) + 1 if close > start else 0


def _spaced_list(data: bytes, start: int, end: int) -> tuple[int, bytes | None]:
    """(its `]`, the list made compact) for an id list in json.dumps' default layout, else -1."""
    close = data.find(b"]", start, end)
    ids = data[start:close] if close >= 0 else b""
    compact = _compact(ids) if b" " in ids else ids
    if compact is ids or IdLists(compact + b"]").end_of(0) != len(compact):
        return -1, None
    return close, compact


def _compact(ids: bytes) -> bytes:
    """An id list in json.dumps' default layout (", ") made compact; else left for the full check.

    Deleting the spaces and counting the ", " pairs is one C pass each, where
    `replace(b", ", b",")` calls a search per id (five times slower on 3,500 ids).
    """
    compact = ids.translate(None, b" ")
    return compact if ids.count(b", ") == len(ids) - len(compact) else ids


def _rest_of_object(data: bytes, start: int, end: int) -> dict[str, Any] | None:
    """The fields in data[start:end] (after `output_ids`), unless they repeat `id` or `output_ids`.

    JSON's last of two equal keys wins: such a line is left to the full check.
    """
    if not data.startswith(b",", start, end):
        return {} if data[start:end].rstrip(b"\r\n") == b"}" else None
    try:
        text = "{" + data[start + 1 : end].decode()
        fields: dict[str, Any]
        fields, stop = _DECODER.raw_decode(text)  # a dict: the text starts with "{"
    except (ValueError, RecursionError):
        return None
    if stop != len(text) and text[stop:].strip(" \t\n\r"):  # json.loads allows only whitespace
        return None
    if not fields or "id" in fields or "output_ids" in fields:  # none: the rest was `,}`
        return None
    return fields


def _head_id(raw: bytes) -> str | None:
    if raw[0] != _QUOTE:
        return str(int(raw))  # at most 19 characters: the pattern bounds it
    try:  # the pattern admits no control character; without escapes, the text is the string
        value = raw[1:-1].decode() if b"\\" not in raw else json.loads(raw.decode())
    except ValueError:
        return None
    return value if isinstance(value, str) and len(value) <= MAX_ID_CHARS else None


def _short(value: Any) -> str:
    """A value for an error message, at most ~40 characters whatever its size or depth."""
    if isinstance(value, (dict, list)):
        return f"a JSON {_json_type(value)}"
    text = json.dumps(value) if isinstance(value, (str, bool)) or value is None else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number"}
    return "null" if value is None else names.get(type(value), "number")
