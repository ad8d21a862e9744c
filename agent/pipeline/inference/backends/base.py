"""What every backend offers the runner, and what it hands back for one prompt.

A `Generation` is the runner's view of an answer whatever the wire: the output ids to record,
the prompt ids the server reports, the finish reason mapped onto the runner's three
(stop, length, abort) with the server's own `stop_reason` kept, and the usage it reported.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.pipeline.inference.client import AbortOutcome, Server
from agent.pipeline.inference.prompts import Prompt

APIS = ("sglang", "openai-completions", "openai-chat")

FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "abort": "abort",
    "repetition": "length",
    "tool_calls": "stop",
    "function_call": "stop",
    "content_filter": "abort",
}
"""Server finish reasons onto the runner's: a repetition cut (vLLM, v1/engine/__init__.py:37)
is flagged like a length cut, a filtered answer is not kept as an answer."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """The sampling every request of a run is sent with."""

    max_new_tokens: int
    temperature: float
    top_p: float
    model: str | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    """The run's seed; each request gets one drawn from it and the record's id (`seed_for`)."""
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    """The chat template's arguments, sent to a server that renders the conversation."""

    def seed_for(self, record_id: str) -> int | None:
        """The request's seed: the same for a record however often it is tried, and in any order."""
        if self.seed is None:
            return None
        digest = hashlib.sha256(f"{self.seed}:{record_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def extra_fields(self, record_id: str, seed_name: str) -> dict[str, Any]:
        """top_k, min_p and the seed, each only when asked for (a server's defaults otherwise)."""
        extra: dict[str, Any] = {"top_k": self.top_k, "min_p": self.min_p,
                                 seed_name: self.seed_for(record_id)}  # fmt: skip
        return {name: value for name, value in extra.items() if value is not None}


@dataclass(frozen=True, slots=True)
class PromptRequest:
    """One prompt to send: the line it came from, its ids (template applied), its request id."""

    prompt: Prompt
    input_ids: list[int]
    rid: str

    def canary(self, rid: str) -> PromptRequest:
        """The same request with a one-token prompt, to tell a refused prompt from a refused run."""
        small = Prompt(self.prompt.id, self.prompt.line_no, text="0", input_ids=[0])
        return PromptRequest(small, [0], rid)


@dataclass(frozen=True, slots=True)
class Generation:
    """One answer, in the runner's terms."""

    output_ids: list[int]
    finish_reason: str
    """stop, length or abort (FINISH_REASONS)."""
    completion_tokens: int
    prompt_tokens: int | None = None
    prompt_ids: list[int] | None = None
    stop_reason: int | str | None = None
    usage: dict[str, Any] | None = None
    record_fields: dict[str, Any] = field(default_factory=dict)
    """Extra fields for the response line (the native meta_info; the re-encoding marks)."""
    cost: float | None = None
    reencoded: bool = False
    mismatch: bool = False
    """Re-encoded, and the server's completion_tokens differs from the re-encoded length."""


def runner_finish(reason: Any) -> str:
    """A server's finish reason as the runner's; an unknown one is kept as stop."""
    return FINISH_REASONS.get(reason, "stop") if isinstance(reason, str) else "stop"


class Backend(Protocol):
    """One way of asking a server for an answer."""

    api: str
    key_env: str
    """The environment variable the API key comes from, named in messages about it."""
    server_kind: str
    """What the server is called in messages: SGLang, or an OpenAI-compatible server."""

    async def generate(
        self, server: Server, request: PromptRequest, timeout_s: float | None = None
    ) -> Generation:
        """One answer; raises TransientError or RejectedError (client.py)."""
        ...

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """Whether the server takes requests, and why not."""
        ...

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """Stop generating `rid`; UNSUPPORTED where only closing the connection does it."""
        ...
