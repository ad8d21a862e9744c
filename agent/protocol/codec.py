"""Lines to typed values and back.

Decoding checks every field against its declared type and refuses what does not fit, naming the
field: a wrong JSON type, a value outside a `Literal`'s set (the error lists the allowed values),
or a field the dataclass does not have. Unknown fields are refused, not ignored: both sides ship
together (the console uploads the agent it was built with), so an unknown field is a bug or a
mismatched peer, and PROTOCOL_VERSION is what changes when a message grows. A union may pair one
type with None and nothing more: with two real types the wire value could be read either way,
so such a field is a schema bug and raises TypeError rather than guessing.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Literal, TypeVar, Union

from agent.protocol.envelopes import ErrorResponse, Event, Message, Request, Response
from agent.protocol.errors import ErrorCode, ErrorInfo, ProtocolError
from agent.protocol.framing import MAX_LINE_BYTES
from agent.protocol.methods import EVENTS, METHODS, Method

T = TypeVar("T")
R = TypeVar("R")


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


def decode(line: bytes | str) -> Message:
    """Parse one wire line; raises ProtocolError saying what is wrong with it."""
    obj = _parse_object(line)
    if "method" in obj:
        return _decode_request(obj)
    if "event" in obj:
        return _decode_event(obj)
    if "result" in obj or "error" in obj:
        return _decode_response(obj)
    raise ProtocolError(ErrorCode.MALFORMED, "line has none of method, event, result or error")


def _parse_object(line: bytes | str) -> dict[str, Any]:
    size = len(line.encode() if isinstance(line, str) else line)
    if size > MAX_LINE_BYTES:
        raise ProtocolError(
            ErrorCode.OVERSIZED, f"line of {size} bytes exceeds the {MAX_LINE_BYTES}-byte limit"
        )
    try:
        obj = json.loads(line.decode() if isinstance(line, bytes) else line)
    except UnicodeDecodeError as exc:
        raise ProtocolError(ErrorCode.MALFORMED, f"line is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            ErrorCode.MALFORMED, f"line is not JSON: {exc.msg} at column {exc.colno}"
        ) from None
    except ValueError as exc:  # json's own limits, such as an integer of over 4300 digits
        raise ProtocolError(ErrorCode.MALFORMED, f"line is not usable JSON: {exc}") from None
    except RecursionError:
        raise ProtocolError(ErrorCode.MALFORMED, "line is JSON nested too deeply") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.MALFORMED, f"line is JSON {type(obj).__name__}, not object")
    return obj


def _decode_request(obj: dict[str, Any]) -> Request[object]:
    request_id = obj.get("id")
    if not isinstance(request_id, int) or isinstance(request_id, bool):
        raise ProtocolError(ErrorCode.MALFORMED, "request has no integer id")
    method = obj["method"]
    spec = METHODS.get(method) if isinstance(method, str) else None
    if spec is None:
        raise ProtocolError(ErrorCode.UNKNOWN_METHOD, f"unknown method {method!r}", request_id)
    key = obj.get("idempotency_key")
    if spec.mutating and not (isinstance(key, str) and key):
        raise ProtocolError(
            ErrorCode.INVALID_PARAMS,
            f"{method} changes state and needs an idempotency_key",
            request_id,
        )
    params = _from_wire_or_error(spec.params, obj.get("params", {}), request_id)
    return Request(request_id, method, params, key if isinstance(key, str) else None)


def _decode_response(obj: dict[str, Any]) -> Response | ErrorResponse:
    request_id = obj.get("id")
    if request_id is not None and (not isinstance(request_id, int) or isinstance(request_id, bool)):
        raise ProtocolError(ErrorCode.MALFORMED, "response id is not an integer")
    if "error" in obj:
        return ErrorResponse(request_id, _from_wire_or_error(ErrorInfo, obj["error"], request_id))
    result = obj["result"]
    if request_id is None or not isinstance(result, dict):
        raise ProtocolError(ErrorCode.MALFORMED, "response needs an integer id and object result")
    return Response(request_id, result)


def _decode_event(obj: dict[str, Any]) -> Event:
    name = obj["event"]
    data_type = EVENTS.get(name) if isinstance(name, str) else None
    if data_type is None:
        raise ProtocolError(ErrorCode.MALFORMED, f"unknown event {name!r}")
    return Event(name, _from_wire_or_error(data_type, obj.get("data"), None))


def parse_result(method: Method[Any, R], response: Response) -> R:
    """The typed result of `method` from its response; raises ProtocolError if it does not fit."""
    return _from_wire_or_error(method.result, response.result, response.id)


def _from_wire_or_error(cls: type[T], data: Any, request_id: int | None) -> T:
    try:
        return from_wire(cls, data)
    except WireTypeError as exc:
        raise ProtocolError(ErrorCode.INVALID_PARAMS, str(exc), request_id) from None


class WireTypeError(ValueError):
    """A wire value does not have the type its dataclass field declares."""


def from_wire(cls: type[T], data: Any, where: str = "") -> T:
    """Build dataclass `cls` from plain JSON values, checking every field's type.

    A value whose type alone shows it fits (a string for a `str` field, null for an optional
    one) is taken as it is; only the others go through their field's converter. A 5,000-dataset
    snapshot holds 160,000 values: this is most of what a console spends on one.
    """
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise WireTypeError(f"{where}: expected an object, got {_json_type(data)}")
    plan = _field_plan(typing.cast(Hashable, cls))
    if not data.keys() <= plan.keys():  # a mismatched peer is named before any wrong value
        raise WireTypeError(f"{where}: unknown field {sorted(data.keys() - plan.keys())[0]!r}")
    values = {}
    for name, value in data.items():
        fits, convert = plan[name]
        values[name] = value if type(value) in fits else convert(value, f"{where}.{name}")
    try:
        return cls(**values)
    except TypeError as exc:
        raise WireTypeError(f"{where}: {exc}") from None


Convert = Callable[[Any, str], Any]
"""Checks and converts one wire value, given where it is (for the error that names it)."""
FieldPlan = tuple[frozenset[type], Convert]
"""The wire types a field's values are taken as they are, and the converter for any other."""


@functools.cache
def _field_types(cls: Any) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {name: hint for name, hint in typing.get_type_hints(cls).items() if name in names}


@functools.cache
def _field_plan(cls: Any) -> dict[str, FieldPlan]:
    """Each field's plan, built once per class."""
    return {name: (_fits_as_is(hint), _converter(hint)) for name, hint in _field_types(cls).items()}


@functools.cache
def _fits_as_is(hint: Any) -> frozenset[type]:
    """The wire types that are already a valid value of `hint`, unchanged (none for most hints).

    Exact types only: a bool is not taken for an int, and an int for a float is converted.
    """
    if hint in (str, int, float, bool):
        return frozenset({hint})
    if typing.get_origin(hint) in (Union, types.UnionType):
        options = typing.get_args(hint)
        real = [option for option in options if option is not type(None)]
        if len(real) == 1 and type(None) in options:
            return _fits_as_is(real[0]) | {type(None)}
    return frozenset()


@functools.cache
def _converter(hint: Any) -> Convert:
    """The converter for values declared as `hint`, decided once per type hint."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return lambda value, where: value
    if origin in (Union, types.UnionType):
        return _union_converter(typing.get_args(hint))
    if origin is Literal:
        return functools.partial(_literal, typing.get_args(hint))
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return _tuple_converter(_converter(item), _fits_as_is(item))
    if origin is dict:
        return _dict_converter(_converter(typing.get_args(hint)[1]))
    if dataclasses.is_dataclass(hint):
        return functools.partial(from_wire, typing.cast(type, hint))
    return _scalar_converter(hint)


def _union_converter(options: tuple[Any, ...]) -> Convert:
    real = [option for option in options if option is not type(None)]
    nullable = type(None) in options
    inner = _converter(real[0]) if len(real) == 1 else None

    def convert(value: Any, where: str) -> Any:
        if inner is None:
            raise TypeError(f"{where}: a union of {len(real)} types is ambiguous on the wire")
        if value is None and nullable:
            return None
        return inner(value, where)

    return convert


def _tuple_converter(item: Convert, fits: frozenset[type]) -> Convert:
    def convert(value: Any, where: str) -> tuple[Any, ...]:
        items = _list(value, where)
        if fits.issuperset(map(type, items)):
            return tuple(items)
        inner = f"{where}[]"
        return tuple(item(v, inner) for v in items)

    return convert


def _dict_converter(item: Convert) -> Convert:
    def convert(value: Any, where: str) -> dict[str, Any]:
        return {str(k): item(v, f"{where}.{k}") for k, v in _dict(value, where).items()}

    return convert


def _scalar_converter(hint: Any) -> Convert:
    """A value of exactly the declared type passes at once; anything else is checked in full."""

    def convert(value: Any, where: str) -> Any:
        if type(value) is hint:
            return value
        return _scalar(hint, value, where)

    return convert


def _literal(allowed: tuple[Any, ...], value: Any, where: str) -> Any:
    if value in allowed and isinstance(value, str):
        return value
    choices = ", ".join(repr(choice) for choice in allowed)
    raise WireTypeError(f"{where}: expected one of {choices}, got {value!r}"[:500])


def _scalar(hint: Any, value: Any, where: str) -> Any:
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
        return value
    raise WireTypeError(f"{where}: expected {hint.__name__}, got {_json_type(value)}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise WireTypeError(f"{where}: expected a list, got {_json_type(value)}")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireTypeError(f"{where}: expected an object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "integer"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
