"""The audit log of mutating requests, as the console reads it back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
    params: dict[str, Any]
    idempotency_key: str | None
    outcome: str


@dataclass(frozen=True, slots=True)
class AuditResult:
    """Audit entries, oldest first."""

    entries: tuple[AuditEntry, ...]
