"""Mutating requests by idempotency key: a retried request gets the first one's answer.

A console retries a request whose answer was lost with the same key (a dropped link, a timeout).
Each key runs its request once: a retry after it finished gets the same result or error, and a
retry that arrives while it still runs (a stop in its grace period) waits for it. Requests are
compared by a digest of their method and params, and finished answers are kept in the state
folder (`idempotency_store`), so both rules hold across daemon restarts: reusing a key for
another request is refused (`key_reused`), a repeat gets the first answer. Launches are also
deduplicated on disk by the supervisor, which a repeated launch asks again for the job as it is.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from agent.journal.idempotency_store import (
    CAPACITY,
    AnswerStore,
    StoredAnswer,
    answer_of,
    request_digest,
)
from agent.protocol import Request
from agent.tasks import TaskOwner


class KeyReusedError(Exception):
    """The key was used before for a different request."""


ErrorFactory = Callable[[str, str], Exception]
RequestHandler = Callable[[Request[Any]], Awaitable[object]]


class IdempotentRequests:
    """The running or finished request of each recent key, and the answers kept on disk."""

    def __init__(
        self,
        answer_errors: tuple[type[Exception], ...],
        idempotent_methods: frozenset[str] = frozenset(),
        capacity: int = CAPACITY,
        store: AnswerStore | None = None,
        error_of: ErrorFactory = lambda code, message: Exception(message),
        tasks: TaskOwner | None = None,
    ) -> None:
        self.answer_errors = answer_errors
        """Errors that are the request's answer (refusals); any other failure may be retried."""
        self.idempotent_methods = idempotent_methods
        """Methods whose handler is idempotent itself (a launch returns the job it started, as it
        is now): a retry after the first run asks the handler again, for a fresh answer."""
        self.capacity = capacity
        self.store = store
        """Answers of requests finished before this daemon started (and since)."""
        self.error_of = error_of
        """Builds the error a stored refusal is raised as again (code, message)."""
        self._runs: OrderedDict[str, tuple[str, asyncio.Task[object]]] = OrderedDict()
        self._tasks = tasks or TaskOwner("idempotent runs")
        """Owns each run: it goes on when its console leaves, and stops when the daemon does."""

    async def run(self, request: Request[object], handler: RequestHandler) -> object:
        """The result of `handler(request)`, run once per idempotency key."""
        key = request.idempotency_key
        if key is None:
            return await handler(request)
        digest = request_digest(request)
        found = self._runs.get(key)
        if found is not None:
            first, task = found
            _same_request(key, first, digest, request)
            if task.done() and request.method in self.idempotent_methods:
                return await handler(request)
            return await asyncio.shield(task)
        stored = self.store.get(key) if self.store is not None else None
        if stored is not None:
            _same_request(key, stored.digest, digest, request)
            if stored.kept and request.method not in self.idempotent_methods:
                return self._replay(stored)
        task = self._tasks.spawn(
            _run(handler, request), f"{request.method} {key}", log_failure=False
        )
        task.add_done_callback(lambda done: self._settled(key, digest, request.method, done))
        self._runs[key] = (digest, task)
        while len(self._runs) > self.capacity:
            self._runs.popitem(last=False)
        return await asyncio.shield(task)

    def _replay(self, stored: StoredAnswer) -> object:
        if stored.error is not None:
            raise self.error_of(*stored.error)
        return stored.result

    def _settled(self, key: str, digest: str, method: str, task: asyncio.Task[object]) -> None:
        """An internal failure may be retried for real; a result or a refusal stays the answer."""
        if task.cancelled():
            self._runs.pop(key, None)
            return
        error = task.exception()  # marks it retrieved even when no one waits any more
        if error is not None and not isinstance(error, self.answer_errors):
            self._runs.pop(key, None)
            return
        if self.store is not None:
            refusal = _code_and_message(error) if error is not None else None
            self.store.put(
                key, answer_of(digest, method, task.result() if error is None else None, refusal)
            )


async def _run(handler: RequestHandler, request: Request[object]) -> object:
    return await handler(request)


def _same_request(key: str, first: str, digest: str, request: Request[object]) -> None:
    if first != digest:
        raise KeyReusedError(
            f"idempotency key {key!r} was used for another request; send a new key for a new "
            f"{request.method}"
        )


def _code_and_message(error: BaseException) -> tuple[str, str]:
    return str(getattr(error, "code", "internal")), str(getattr(error, "message", error))
