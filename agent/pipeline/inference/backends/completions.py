"""`/v1/completions` with the prompt as token ids: vLLM, SGLang's /v1, any server that takes ids.

The prompt goes as the ids the runner's prompt shapes produce (vLLM neither re-tokenizes them nor
adds a BOS, renderers/base.py:716; SGLang passes them as input_ids, serving_completions.py:98-103);
`max_tokens` is always set, since vLLM's default is 16 (completion/protocol.py:64); vLLM 0.33
and 0.34 clamp it to what the prompt leaves of the context (serve/utils/api_utils.py:234-270)
and refuse it past the context itself (renderers/params.py:272-284, which stops the run:
rejections.py); `return_token_ids: true` asks for the
generated ids, EOS/stop id included, and the prompt ids (protocol.py:172; openai-compat-wire.md
§1, §3). Records carry those ids exactly as returned; a server that sends none is refused, since
a completion's text cannot be turned back into the ids the model sampled. sglang-router 0.3.2
refuses token-id prompts on /v1/completions (HTTP 422) and drops `return_token_ids`, so a router
(told by its /get_server_info, agent/host/server_identity.py) is refused before any prompt is
sent, with the way to its workers' exact ids: `--api sglang`.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from agent.pipeline.inference.backends.base import (
    Generation,
    PromptRequest,
    Sampling,
    runner_finish,
)
from agent.pipeline.inference.backends.openai_http import OPENAI_KEY_ENV, OpenAIClient
from agent.pipeline.inference.client import AbortOutcome, RejectedError, Server
from agent.pipeline.inference.rejections import RequestRejectedError

NO_IDS = (
    "the server sent no token_ids for /v1/completions (it does not support return_token_ids): "
    "use --api openai-chat for a text-only API"
)
BEHIND_ROUTER = (
    "{url} is an sglang-router, which refuses token-id prompts on /v1/completions (HTTP 422) "
    "and drops return_token_ids (sglang-router 0.3.2). For the exact ids use --api sglang "
    "(the workers' /generate, with the same prompts and --tokenizer)"
)


class CompletionsBackend:
    """One prompt, as ids, to /v1/completions; the ids it generated, as returned."""

    api = "openai-completions"
    server_kind = "OpenAI-compatible"
    key_env = OPENAI_KEY_ENV

    def __init__(
        self, session: aiohttp.ClientSession, timeout_s: float, api_key: str | None,
        sampling: Sampling,
    ) -> None:  # fmt: skip
        self.client = OpenAIClient(session, timeout_s, api_key)
        self.sampling = sampling

    async def generate(
        self, server: Server, request: PromptRequest, timeout_s: float | None = None
    ) -> Generation:
        """One completion; refused at once behind an sglang-router."""
        if await self.client.kind_of(server) == "router":
            raise RequestRejectedError(BEHIND_ROUTER.format(url=server.url))
        body = await self.client.post(server, "completions", self.payload(request), timeout_s)
        return generation_of(body["choices"][0] if body["choices"] else {}, body)

    def payload(self, request: PromptRequest) -> dict[str, Any]:
        """The request body: ids in, ids back, max_tokens always set."""
        sampling = self.sampling
        payload: dict[str, Any] = {
            "prompt": request.input_ids,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            **sampling.extra_fields(request.prompt.id, "seed"),
            "return_token_ids": True,
        }
        return payload | ({"model": sampling.model} if sampling.model else {})

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """GET /v1/models."""
        return await self.client.healthy(server)

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """Closing the connection is the abort."""
        return await self.client.abort(server, rid)


def generation_of(choice: dict[str, Any], body: dict[str, Any]) -> Generation:
    """A choice carrying `token_ids` as the runner's Generation; prompt ids where reported."""
    ids = choice.get("token_ids")
    if not isinstance(ids, list):
        raise RejectedError(NO_IDS, 501)
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    prompt_ids = choice.get("prompt_token_ids", body.get("prompt_token_ids"))
    prompt_tokens = (usage or {}).get("prompt_tokens")
    return Generation(
        output_ids=ids,
        finish_reason=runner_finish(choice.get("finish_reason")),
        completion_tokens=len(ids),
        prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
        prompt_ids=prompt_ids if isinstance(prompt_ids, list) else None,
        stop_reason=choice.get("stop_reason", choice.get("matched_stop")),
        usage=usage,
        cost=cost_of(usage),
        record_fields={"tokens": "exact", "server_finish_reason": choice.get("finish_reason")},
    )


def cost_of(usage: dict[str, Any] | None) -> float | None:
    """`usage.cost`, where the API reports what an answer cost (OpenRouter does)."""
    cost = (usage or {}).get("cost")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
