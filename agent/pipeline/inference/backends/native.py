"""SGLang's native `/generate` with `input_ids`: the runner's original exchange, unchanged.

Shapes in sglang-0.5-wire.md: `output_ids` at the top, `meta_info.finish_reason.type` and
`matched` (schedule_batch.py:279-345), `meta_info.completion_tokens` and `prompt_tokens`.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from agent.host.sglang_auth import API_KEY_ENV
from agent.pipeline.inference.backends.base import (
    Generation,
    PromptRequest,
    Sampling,
    runner_finish,
)
from agent.pipeline.inference.client import AbortOutcome, Server, SglangClient


class SglangBackend:
    """POST /generate, SGLang's health checks and /abort_request."""

    api = "sglang"
    server_kind = "SGLang"
    key_env = API_KEY_ENV

    def __init__(
        self, session: aiohttp.ClientSession, timeout_s: float, api_key: str | None,
        sampling: Sampling,
    ) -> None:  # fmt: skip
        self.client = SglangClient(session, timeout_s, api_key)
        self.sampling = sampling

    async def generate(
        self, server: Server, request: PromptRequest, timeout_s: float | None = None
    ) -> Generation:
        """One /generate call."""
        body = await self.client.generate(server, self.payload(request), timeout_s)
        meta = body.get("meta_info") or {}
        finish = meta.get("finish_reason") or {}
        tokens = meta.get("completion_tokens")
        ids = body["output_ids"]
        return Generation(
            output_ids=ids,
            finish_reason=runner_finish(finish.get("type", "stop")),
            completion_tokens=tokens if isinstance(tokens, int) else len(ids),
            prompt_tokens=meta.get("prompt_tokens"),
            stop_reason=finish.get("matched"),
            record_fields={"meta_info": meta},
        )

    def payload(self, request: PromptRequest) -> dict[str, Any]:
        """The /generate body."""
        sampling = self.sampling
        return {
            "input_ids": request.input_ids,
            "sampling_params": {
                "max_new_tokens": sampling.max_new_tokens,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                **sampling.extra_fields(request.prompt.id, "sampling_seed"),
            },
            "rid": request.rid,
        }

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """/health, or /readiness and a one-token request for a router."""
        return await self.client.healthy(server)

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """/abort_request by rid."""
        return await self.client.abort(server, rid)
