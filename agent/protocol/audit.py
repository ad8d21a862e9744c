"""The audit log of mutating requests, as the console reads it back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AuditParams:
    """The last `limit` entries of the audit log."""

    limit: int = 100


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One mutating request: who, what, when, and how it ended."""

    ts: float
    client: str
    method: str
    params: dict[str, object]
    """The request's params as they went on the wire (their type depends on `method`)."""
    idempotency_key: str | None
    outcome: str


@dataclass(frozen=True, slots=True)
class AuditResult:
    """Audit entries, oldest first."""

    entries: tuple[AuditEntry, ...]
