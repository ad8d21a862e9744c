"""Mutating requests by idempotency key: a retried request gets the first one's answer.

A console retries a request whose answer was lost with the same key (a dropped link, a timeout).
Each key runs its request once per daemon: a retry after it finished gets the same result or
error, and a retry that arrives while it still runs (a stop in its grace period) waits for it.
Reusing a key for another request is refused. Launches are also deduplicated on disk by the
supervisor, so they stay single across daemon restarts too.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from agent.protocol import Request

CAPACITY = 4096
"""Keys remembered; the oldest are forgotten first."""


class KeyReusedError(Exception):
    """The key was used before for a different request."""


class IdempotentRequests:
    """The running or finished request of each recent key."""

    def __init__(
        self,
        answer_errors: tuple[type[Exception], ...],
        idempotent_methods: frozenset[str] = frozenset(),
        capacity: int = CAPACITY,
    ) -> None:
        self.answer_errors = answer_errors
        """Errors that are the request's answer (refusals); any other failure may be retried."""
        self.idempotent_methods = idempotent_methods
        """Methods whose handler is idempotent itself (a launch returns the job it started, as it
        is now): a retry after the first run asks the handler again, for a fresh answer."""
        self.capacity = capacity
        self._runs: OrderedDict[str, tuple[Request, asyncio.Task[Any]]] = OrderedDict()

    async def run(self, request: Request, handler: Callable[[Request], Awaitable[Any]]) -> Any:
        """The result of `handler(request)`, run once per idempotency key."""
        key = request.idempotency_key
        if key is None:
            return await handler(request)
        found = self._runs.get(key)
        if found is not None:
            first, task = found
            if (first.method, first.params) != (request.method, request.params):
                raise KeyReusedError(
                    f"idempotency key {key!r} was used for another request ({first.method}); "
                    "send a new key for a new request"
                )
            if task.done() and request.method in self.idempotent_methods:
                return await handler(request)
            return await asyncio.shield(task)
        task = asyncio.ensure_future(handler(request))
        task.add_done_callback(lambda done: self._settled(key, done))
        self._runs[key] = (request, task)
        while len(self._runs) > self.capacity:
            self._runs.popitem(last=False)
        return await asyncio.shield(task)

    def _settled(self, key: str, task: asyncio.Task[Any]) -> None:
        """An internal failure may be retried for real; a result or a refusal stays the answer."""
        if task.cancelled():
            self._runs.pop(key, None)
            return
        error = task.exception()  # marks it retrieved even when no one waits any more
        if error is not None and not isinstance(error, self.answer_errors):
            self._runs.pop(key, None)
