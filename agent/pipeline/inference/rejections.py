"""Telling a refused request from a refused prompt.

SGLang answers HTTP 400 both when one prompt cannot be served (longer than the context, empty)
and when no request of this run can be (top_p out of range, an unknown sampling key,
max_new_tokens past the context length): marking every prompt `permanent` for the second kind
loses the whole run, since the corrected rerun then skips them all. So a refusal is judged once
per kind of message: the same request with a one-token prompt (`input_ids: [0]`, as SGLang's own
health check sends, http_server.py:757-760) is tried, and if the server refuses that too, the
refusal is the run's, not the prompt's. 401 and 403 are the run's without asking.
"""

from __future__ import annotations

import asyncio
import re
import secrets

from agent.pipeline.inference.answer_checks import usable_answer
from agent.pipeline.inference.backends.base import Backend, PromptRequest
from agent.pipeline.inference.client import RejectedError, Server, TransientError


class RequestRejectedError(Exception):
    """The server refuses every request of this run: stop at once and mark nothing."""


def run_level_message(
    exc: RejectedError, key_source: str | None, key_env: str = "SGLANG_API_KEY"
) -> str:
    """The one line that stops the run; `key_source` says where the API key came from, if any.

    `key_env` is the variable the run's backend reads its key from, so the advice names it.
    """
    if exc.status == 401:
        key = "--api-key" if key_env == "SGLANG_API_KEY" else "API key"
        if key_source:  # a key was sent: it is set, and wrong
            return (
                f"the server refused {key_source} (HTTP 401 {exc.server_message}): check the "
                f"key; it must be the server's {key}"
            )
        return (
            f"the server wants an API key (HTTP 401 {exc.server_message}): put its {key} in "
            f"{key_env} or in a file passed with --api-key-file"
        )
    if exc.status == 403:
        return f"the server forbids these requests (HTTP 403 {exc.server_message})"
    return (
        f"the server refuses every request of this run ({exc}); nothing was marked failed: "
        "fix the flags and run again"
    )


class RejectionJudge:
    """Decides, once per kind of refusal, whether it is the prompt's or the whole run's."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._verdicts: dict[str, asyncio.Task[bool | None]] = {}

    async def is_run_level(
        self, exc: RejectedError, server: Server, request: PromptRequest
    ) -> bool | None:
        """True: no request can pass; False: only this prompt; None: could not tell yet."""
        if exc.status in (401, 403):
            return True
        key = f"{exc.status} {re.sub(r'[0-9]+', '#', exc.server_message)}"
        if key not in self._verdicts:
            self._verdicts[key] = asyncio.create_task(self._try_canary(server, request))
        verdict = await asyncio.shield(self._verdicts[key])
        if verdict is None:
            self._verdicts.pop(key, None)  # ask again next time
        return verdict

    def close(self) -> None:
        """Stop any canary still waiting for its answer."""
        for task in self._verdicts.values():
            task.cancel()

    async def _try_canary(self, server: Server, request: PromptRequest) -> bool | None:
        canary = request.canary(f"canary-{secrets.token_hex(4)}")
        try:
            await usable_answer(self.backend, server, canary)  # a broken answer tells nothing
        except RejectedError:
            return True
        except TransientError:
            return None
        return False
