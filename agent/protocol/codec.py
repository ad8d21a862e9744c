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
import types
import typing
from collections.abc import Hashable, Mapping
from typing import Any, Literal, TypeVar, Union

from agent.protocol.envelopes import ErrorResponse, Event, Message, Request, Response
from agent.protocol.errors import ErrorCode, ErrorInfo, ProtocolError
from agent.protocol.framing import MAX_LINE_BYTES
from agent.protocol.methods import EVENTS, METHODS, Method

T = TypeVar("T")
R = TypeVar("R")


def encode(message: Message) -> bytes:
    """One message as one wire line, newline included."""
    return (json.dumps(_envelope(message), separators=(",", ":")) + "\n").encode()


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


def to_wire(value: Any) -> Any:
    """A dataclass (or anything nested in one) as plain JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_wire(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): to_wire(item) for key, item in value.items()}
    return value


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
    """Build dataclass `cls` from plain JSON values, checking every field's type."""
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise WireTypeError(f"{where}: expected an object, got {_json_type(data)}")
    hints = _field_types(typing.cast(Hashable, cls))
    unknown = sorted(set(data) - hints.keys())
    if unknown:
        raise WireTypeError(f"{where}: unknown field {unknown[0]!r}")
    values = {name: _convert(hints[name], value, f"{where}.{name}") for name, value in data.items()}
    try:
        return cls(**values)
    except TypeError as exc:
        raise WireTypeError(f"{where}: {exc}") from None


@functools.cache
def _field_types(cls: Any) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {name: hint for name, hint in typing.get_type_hints(cls).items() if name in names}


def _convert(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        return _convert_union(typing.get_args(hint), value, where)
    if origin is Literal:
        return _literal(typing.get_args(hint), value, where)
    if origin is tuple:
        return tuple(
            _convert(typing.get_args(hint)[0], v, f"{where}[]") for v in _list(value, where)
        )
    if origin is dict:
        value_hint = typing.get_args(hint)[1]
        return {
            str(k): _convert(value_hint, v, f"{where}.{k}") for k, v in _dict(value, where).items()
        }
    if dataclasses.is_dataclass(hint):
        return from_wire(typing.cast(type, hint), value, where)
    return _scalar(hint, value, where)


def _convert_union(options: tuple[Any, ...], value: Any, where: str) -> Any:
    real = [option for option in options if option is not type(None)]
    if len(real) != 1:
        raise TypeError(f"{where}: a union of {len(real)} types is ambiguous on the wire")
    if value is None and type(None) in options:
        return None
    return _convert(real[0], value, where)


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
