"""The webhook's state, as `notify.status` returns it: what `doctor` shows of the notifier."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NotifyStatusParams:
    """Asks how the webhook has fared since the daemon started."""


@dataclass(frozen=True, slots=True)
class NotifyStatus:
    """How many notifications went out and how many were lost, and the last reason why."""

    site: str | None
    """The webhook's scheme and host only (its path is often a secret); None when none is set."""
    sent: int = 0
    dead_letters: int = 0
    """Notifications dropped: queue full, over the rate limit, or every try failed."""
    last_failure: str | None = None
    """Why the last one was lost (`HTTP 503`, `timed out`, `over the rate limit`), never the URL."""
    last_failure_at: float | None = None
    pending: int = 0
    """Notifications queued or being tried now (a retry's backoff included)."""
