"""Wire lines to messages and back: the envelope of each line, checked before anything is typed.

Decoding checks every field against its declared type (typed_decoding.py) and refuses what does
not fit. Unknown fields are refused, not ignored: both sides ship together (the console uploads
the agent it was built with), so an unknown field is a bug or a mismatched peer, and
PROTOCOL_VERSION is what changes when a message grows. Encoding is in encoding.py.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from agent.protocol.envelopes import ErrorResponse, Event, Message, Request, Response
from agent.protocol.errors import ErrorCode, ErrorInfo, ProtocolError
from agent.protocol.framing import MAX_LINE_BYTES
from agent.protocol.methods import EVENTS, METHODS, Method
from agent.protocol.typed_decoding import WireTypeError, from_wire

T = TypeVar("T")
R = TypeVar("R")


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
