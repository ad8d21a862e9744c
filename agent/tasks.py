"""An owner for the agent's background tasks, so none outlives what it serves (after aiojobs).

Every task the daemon starts on its own (a log follow, a probe refresh, an idempotent run) is
spawned through an owner. Closing the owner cancels them all and waits for them, up to a time
limit: a task that will not stop is logged and left, and shutdown goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
CLOSE_TIMEOUT_S = 5.0


class OwnerClosedError(RuntimeError):
    """A task was spawned after its owner closed."""


class TaskOwner:
    """Spawns tasks, forgets them when they end, and cancels the rest on close."""

    def __init__(self, name: str, close_timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        self.name = name
        self.close_timeout_s = close_timeout_s
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def active(self) -> int:
        """Tasks spawned and not yet ended."""
        return len(self._tasks)

    def spawn(
        self, work: Coroutine[Any, Any, T], name: str, *, log_failure: bool = True
    ) -> asyncio.Task[T]:
        """Run `work` as a task this owner cancels on close.

        A failure is logged with its traceback unless `log_failure` is off (the caller awaits
        the task and answers its error itself).
        """
        if self._closed:
            work.close()
            raise OwnerClosedError(f"{self.name} is closed; not starting {name}")
        task = asyncio.create_task(work, name=f"{self.name}: {name}")
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._ended(done, log_failure))
        return task

    def _ended(self, task: asyncio.Task[Any], log_failure: bool) -> None:
        self._tasks.discard(task)
        if log_failure and not task.cancelled() and (error := task.exception()) is not None:
            log.error("task %s failed", task.get_name(), exc_info=error)

    async def close(self) -> None:
        """Cancel every task and wait for them, at most `close_timeout_s`."""
        self._closed = True
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, stuck = await asyncio.wait(tasks, timeout=self.close_timeout_s)
        for task in stuck:
            log.warning("task %s did not stop within %.1f s", task.get_name(), self.close_timeout_s)
