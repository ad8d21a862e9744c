"""The requests a runner has out: each one's task, prompt and server, and how they are ended.

A request is an asyncio Task, so ending it is real: the server is asked to abort it
(`/abort_request`, so its partial count comes back), then what has not come back within a grace is
cancelled. Never a bare coroutine, which has no `.cancel()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from agent.pipeline.inference.backends import Backend
from agent.pipeline.inference.client import AbortOutcome, Server
from agent.pipeline.inference.prompts import Prompt

log = logging.getLogger("runner")

ABORT_GRACE_S = 5.0
"""How long aborted requests get to come back with their partial counts before being cancelled."""


class InFlight:
    """The runner's requests between dispatch and answer."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tasks: set[asyncio.Task[None]] = set()
        self._prompts: dict[asyncio.Task[None], Prompt] = {}
        """Each task's prompt, so a task that fails in a way nobody foresaw still gets it marked."""
        self._sent_to: dict[asyncio.Task[None], tuple[Server, str]] = {}

    def __len__(self) -> int:
        return len(self.tasks)

    def add(self, task: asyncio.Task[None], prompt: Prompt) -> None:
        """A task was launched for `prompt`."""
        self.tasks.add(task)
        self._prompts[task] = prompt

    def sent(self, task: asyncio.Task[None], server: Server, rid: str) -> None:
        """The task's request went to `server` as `rid` (what an abort names)."""
        self._sent_to[task] = (server, rid)

    def finished(self, task: asyncio.Task[None]) -> Prompt:
        """The task ended (answered, failed or cancelled); returns its prompt."""
        self.tasks.discard(task)
        self._sent_to.pop(task, None)
        return self._prompts.pop(task)

    async def drain(
        self, changed: asyncio.Event, hard_stop: asyncio.Event, within_s: float
    ) -> None:
        """Wait for the answers out to come back, until `within_s` passes or a hard stop."""
        deadline = time.monotonic() + within_s
        log.warning("[%s] draining %d request(s) in flight", self.name, len(self.tasks))
        while self.tasks and not hard_stop.is_set() and time.monotonic() < deadline:
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), deadline - time.monotonic())

    async def cancel(self, client: Backend, hard_stop: asyncio.Event) -> int:
        """Abort every request at its server, wait a grace, cancel the rest; returns how many."""
        log.warning("[%s] cancelling %d request(s) in flight", self.name, len(self.tasks))
        outcomes = await asyncio.gather(
            *(client.abort(server, rid) for server, rid in list(self._sent_to.values()))
        )
        if AbortOutcome.UNSUPPORTED in outcomes:  # sglang-router has no /abort_request
            log.warning(
                "[%s] /abort_request is not there (HTTP 404, a router?): closing %d in-flight "
                "connection(s) at once", self.name, len(self.tasks),
            )  # fmt: skip
        elif self.tasks and not hard_stop.is_set():
            await asyncio.wait(set(self.tasks), timeout=ABORT_GRACE_S)
        cancelled = 0
        for task in list(self.tasks):
            task.cancel()
            cancelled += 1
        await asyncio.gather(*self.tasks, return_exceptions=True)
        return cancelled
