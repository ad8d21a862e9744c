"""Saying what the box did: one event in the history, a webhook where it matters, and a push.

An operation's step, a restart, a stage of the autopilot: each is written to the timeline
(`events.list`, `eagle-console events`), sent to the webhook when it is at or above its
severity floor, and, for an operation, pushed to every console at once. None of it waits on
the history or the webhook: a locked history file or a slow hook never holds an operation up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from agent.protocol import Event, OperationInfo
from agent.tasks import OwnerClosedError, TaskOwner
from agent.watch.history import History
from agent.watch.notify import Notifier

log = logging.getLogger(__name__)

Broadcast = Callable[[Event], Coroutine[Any, Any, None]]


class Announcer:
    """Writes events to the history and the webhook, and pushes operations to the consoles."""

    def __init__(
        self, history: History, notifier: Notifier, broadcast: Broadcast, tasks: TaskOwner
    ) -> None:
        self._history = history
        self._notifier = notifier
        self._broadcast = broadcast
        self._tasks = tasks

    def event(
        self, kind: str, subject: str, message: str, severity: str = "info", **detail: Any
    ) -> None:
        """Record one event and send it to the webhook if it is severe enough; never waits."""
        self._spawn(self._history.add_event(kind, subject, message, severity, **detail), kind)
        self._notifier.notice(kind, subject, severity, message)

    def operation(self, info: OperationInfo) -> None:
        """Push where an operation stands to every console; never waits."""
        self._spawn(self._broadcast(Event("operation", info)), "operation event")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        try:
            _ = self._tasks.spawn(work, f"announce {name}")
        except OwnerClosedError:  # spawn closed `work`: nothing is left un-awaited
            log.info("not announced (the agent is stopping): %s", name)
