"""The four kinds of line: request, response, error response and event."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from agent.protocol.errors import ErrorInfo
from agent.protocol.methods import EventData

P_co = TypeVar("P_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Request(Generic[P_co]):
    """Console → agent: call `method` with `params` (the params type of that method)."""

    id: int
    method: str
    params: P_co
    idempotency_key: str | None = None
    """Required on mutating methods, so a retry after a reconnect is not done twice."""


@dataclass(frozen=True, slots=True)
class Response:
    """Agent → console: the result of request `id` (decode it with `parse_result`).

    The result stays plain JSON here: which type it has depends on the method of the request,
    which only the side that sent it knows.
    """

    id: int
    result: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """Agent → console: request `id` failed (`id` is None when the line had no readable id)."""

    id: int | None
    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class Event:
    """Agent → console, unprompted: a snapshot, a log chunk, an alert or a job change."""

    event: str
    data: EventData


Message = Request[object] | Response | ErrorResponse | Event
