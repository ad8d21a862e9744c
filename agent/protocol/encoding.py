"""Typed values to wire lines.

Envelopes and dataclasses become JSON, and a memo reuses the text of what did not change since
the last message.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import typing
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from agent.protocol.envelopes import ErrorResponse, Event, Message, Request, Response

T = TypeVar("T")


class WireMemo:
    """The JSON text of the objects in the last message encoded with it, to reuse unencoded.

    Messages are frozen dataclasses: an object passed again (the very object, as the datasets
    scan hands back an unchanged dataset's) has the same text. An object new since then but at
    the same place (the same dataset, its token count alone moved) reuses the text of each field
    whose value is the very object it was: only what changed is encoded again. Only the objects
    of the last message are kept, so it holds one snapshot's worth at most. Sharing one between
    threads costs at worst a miss, never a wrong text: an entry holds its object, so its id is
    not reused.
    """

    def __init__(self) -> None:
        self.last: dict[int, MemoEntry] = {}
        self.now: dict[int, MemoEntry] = {}
        self.last_at: dict[Place, MemoEntry] = {}
        self.now_at: dict[Place, MemoEntry] = {}

    def next_message(self) -> None:
        """Keep what the message just encoded held, and forget the one before."""
        self.last, self.now = self.now, {}
        self.last_at, self.now_at = self.now_at, {}


Place = tuple[Any, ...]
"""Where an object sits in a message: its parent's place and its field name or list index."""
MemoEntry = tuple[object, tuple[str, ...], str]
"""An encoded dataclass: the object, each field's `"name":text`, and the object's whole text."""


def encode(message: Message, memo: WireMemo | None = None) -> bytes:
    """One message as one wire line, newline included.

    With a `memo`, the line is written as text piece by piece (a field at a time, reusing the
    last message's text where nothing changed) rather than by one `json.dumps` of the whole,
    which held the GIL, and every ping, for the 3 MB of a 5,000-dataset snapshot.
    """
    if memo is None:
        return _line(_envelope(message))
    if isinstance(message, Response):
        return _memo_line(f'{{"id":{_json(message.id)},"result":', message.result, memo)
    if isinstance(message, Event):
        return _memo_line(f'{{"event":{_json(message.event)},"data":', message.data, memo)
    return _line(_envelope(message))


def encode_result(request_id: int, result: object, memo: WireMemo | None = None) -> bytes:
    """The response line for `result` (a dataclass), converted to wire values once."""
    if memo is None:
        return _line({"id": request_id, "result": to_wire(result)})
    return _memo_line(f'{{"id":{_json(request_id)},"result":', result, memo)


_JSON = json.JSONEncoder(separators=(",", ":"))
"""What `json.dumps(value, separators=(",", ":"))` writes, without building an encoder a call."""
_json = _JSON.encode


def _line(envelope: dict[str, Any]) -> bytes:
    return (_json(envelope) + "\n").encode()


def _memo_line(head: str, value: object, memo: WireMemo) -> bytes:
    line = head + _text(value, memo, ()) + "}\n"
    memo.next_message()
    return line.encode()


def _text(value: Any, memo: WireMemo, place: Place) -> str:
    """`value`'s JSON text, as `json.dumps` of its `to_wire` form writes it."""
    kind = type(value)
    plain = _PLAIN_TEXT.get(kind)
    if plain is not None:
        return plain(value)
    names = _field_names(typing.cast(Hashable, kind))
    if names is not None:
        return _object_text(value, names, memo, place)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(item, memo, (place, i)) for i, item in enumerate(value)) + "]"
    if isinstance(value, Mapping):
        return _json(to_wire(value))
    return _json(value)


def _object_text(value: Any, names: tuple[str, ...], memo: WireMemo, place: Place) -> str:
    """Dataclass `value` as a JSON object: the last message's very text when it held `value`."""
    found = memo.last.get(id(value))
    if found is not None and found[0] is value:
        memo.now[id(value)] = memo.now_at[place] = found
        return found[2]
    texts = _field_texts(value, names, memo, place)
    text = "{" + ",".join(texts) + "}"
    memo.now[id(value)] = memo.now_at[place] = (value, texts, text)
    return text


def _field_texts(
    value: Any, names: tuple[str, ...], memo: WireMemo, place: Place
) -> tuple[str, ...]:
    """Each field of dataclass `value` as `"name":text`, reusing the last message's where it can."""
    before = memo.last_at.get(place)
    keys = _key_texts(typing.cast(Hashable, type(value)))
    if before is None or type(before[0]) is not type(value):
        return tuple(
            keys[i] + _text(getattr(value, name), memo, (place, name))
            for i, name in enumerate(names)
        )
    return _changed_field_texts(value, names, keys, before, memo, place)


def _changed_field_texts(
    value: Any, names: tuple[str, ...], keys: tuple[str, ...], before: MemoEntry, memo: WireMemo,
    place: Place,
) -> tuple[str, ...]:  # fmt: skip
    """Fields of `value` that hold the very (immutable) value `before` held keep its text."""
    old, old_texts, _ = before
    texts = []
    for i, name in enumerate(names):
        field = getattr(value, name)
        if getattr(old, name) is field and type(field) not in _MUTABLE_TYPES:
            texts.append(old_texts[i])
        else:
            texts.append(keys[i] + _text(field, memo, (place, name)))
    return tuple(texts)


def _float_text(value: float) -> str:
    """A float as `json.dumps` writes it (which allows NaN and the infinities)."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_PLAIN_TEXT: dict[type, Callable[[Any], str]] = {
    str: json.encoder.encode_basestring_ascii,
    int: int.__repr__,
    float: _float_text,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}
"""The JSON text of each plain type, written as `json.dumps` does, without its per-call set-up
(which cost more than the value: 40 us a float)."""

_MUTABLE_TYPES = frozenset({list, dict})
"""Values that may have changed in place since the last message: always encoded again."""


@functools.cache
def _key_texts(kind: Any) -> tuple[str, ...]:
    """Each field name of dataclass type `kind` as the `"name":` that precedes its value."""
    return tuple(_json(name) + ":" for name in typing.cast(tuple[str, ...], _field_names(kind)))


def _envelope(message: Message) -> dict[str, Any]:
    if isinstance(message, Request):
        line = {"id": message.id, "method": message.method, "params": to_wire(message.params)}
        if message.idempotency_key is not None:
            line["idempotency_key"] = message.idempotency_key
        return line
    if isinstance(message, Response):
        return {"id": message.id, "result": to_wire(message.result)}
    if isinstance(message, ErrorResponse):
        return {"id": message.id, "error": to_wire(message.error)}
    return {"event": message.event, "data": to_wire(message.data)}


_PLAIN_TYPES = frozenset(_PLAIN_TEXT)
"""Values that go on the wire as they are: the common case, checked first (no reflection)."""


def to_wire(value: Any) -> Any:
    """A dataclass (or anything nested in one) as plain JSON-ready values.

    A snapshot of 5,000 datasets is some 160,000 values: plain ones return at once, and each
    dataclass type's field names are looked up once (bench_daemon: 2 s to encode it before).
    """
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    names = _field_names(typing.cast(Hashable, kind))
    if names is not None:
        return {name: to_wire(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [to_wire(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_wire(item) for key, item in value.items()}
    return value


@functools.cache
def _field_names(kind: Any) -> tuple[str, ...] | None:
    """The field names of a dataclass type, or None for any other type."""
    if not dataclasses.is_dataclass(kind):
        return None
    return tuple(f.name for f in dataclasses.fields(kind))
