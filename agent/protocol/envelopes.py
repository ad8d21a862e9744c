"""The four kinds of line: request, response, error response and event."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent.protocol.errors import ErrorInfo


@dataclass(frozen=True, slots=True)
class Request:
    """Console → agent: call `method` with `params`."""

    id: int
    method: str
    params: Any
    idempotency_key: str | None = None
    """Required on mutating methods, so a retry after a reconnect is not done twice."""


@dataclass(frozen=True, slots=True)
class Response:
    """Agent → console: the result of request `id` (decode it with `parse_result`)."""

    id: int
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """Agent → console: request `id` failed (`id` is None when the line had no readable id)."""

    id: int | None
    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class Event:
    """Agent → console, unprompted: a snapshot, a log chunk, an alert or a job change."""

    event: str
    data: Any


Message = Request | Response | ErrorResponse | Event
