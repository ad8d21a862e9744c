"""`/v1/chat/completions`, streamed: token ids where the server returns them, else re-encoded text.

vLLM returns `token_ids` per choice (per chunk in a stream) and `prompt_token_ids` when asked
with `return_token_ids` (chat_completion/protocol.py:128,155; serving.py:608-620): those are
recorded exactly. SGLang refuses `return_token_ids` in a chat stream (400, serving_chat.py:
1310-1320) but, asked with `return_output_ids_in_sglext`, ends the stream with a chunk whose
`sglext.output_ids` holds each choice's ids (serving_chat.py:1283,2716-2760): recorded exactly
too, without prompt ids unless the chunk carries `sglext.input_ids`. Which of the two to ask for
is decided once per server, by the keys of its `/server_info` (agent/host/server_identity.py):
vLLM answers there too when VLLM_SERVER_DEV_MODE=1, so a 200 alone is no sign of SGLang.
sglang-router 0.3.2 drops both asks (and `stream_options`): through it a chat answer is text
only, so the run is refused with the way to exact ids (`--api sglang`, its workers' /generate).
A hosted API returns text only: with `--reencode` the reasoning (`reasoning`,
`reasoning_content` or `reasoning_details`, by server: openai-compat-wire.md §2-4) and the content
are re-encoded with the target's tokenizer (reencode.py), and the record says so
(`"tokens": "reencoded"`) with the server's completion_tokens beside the re-encoded length;
without it a text-only answer stops the run, since a run is to record exact ids unless told
otherwise. Streaming keeps long answers from idling out at a proxy; an error inside the stream
is an error (openai_http.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import aiohttp

from agent.pipeline.inference.backends.base import (
    Generation,
    PromptRequest,
    Sampling,
    runner_finish,
)
from agent.pipeline.inference.backends.completions import cost_of
from agent.pipeline.inference.backends.openai_http import OPENAI_KEY_ENV, OpenAIClient
from agent.pipeline.inference.backends.reencode import Reencoder
from agent.pipeline.inference.client import AbortOutcome, RejectedError, Server
from agent.pipeline.inference.rejections import RequestRejectedError

REASONING_FIELDS = ("reasoning", "reasoning_content")
NO_TOKENIZER = "the server returned text only and there is no --tokenizer to re-encode it with"
BEHIND_ROUTER = (
    "{url} is an sglang-router, which drops return_token_ids and return_output_ids_in_sglext "
    "from /v1/chat/completions (sglang-router 0.3.2): its answers would be text only. "
    "For the exact ids use --api sglang (the workers' /generate, the chat template applied "
    "with --tokenizer); to record the text re-encoded instead, add --reencode"
)
TEXT_ONLY = (
    "{url} answered text only, without the token ids asked for with return_token_ids: nothing "
    "was recorded. For the exact ids use a server that returns them (vLLM, SGLang, or --api "
    "sglang); to record a hosted API's text re-encoded with --tokenizer, add --reencode"
)


@dataclass
class ChatAnswer:
    """A chat stream, accumulated."""

    content_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    token_ids: list[int] | None = None
    prompt_ids: list[int] | None = None
    finish: str | None = None
    stop_reason: Any = None
    usage: dict[str, Any] | None = None
    deltas: list[str] = field(default_factory=list)

    @property
    def content(self) -> str:
        """The answer's text so far."""
        return "".join(self.content_parts)

    @property
    def reasoning(self) -> str:
        """The answer's reasoning text so far, wherever the server put it."""
        return "".join(self.reasoning_parts)

    def add(self, event: dict[str, Any]) -> None:
        """Fold one stream event in."""
        if isinstance(event.get("prompt_token_ids"), list):
            self.prompt_ids = event["prompt_token_ids"]
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        if isinstance(event.get("sglext"), dict):
            self._add_sglext(event["sglext"])
        for choice in event.get("choices") or ():
            self._add_choice(choice)

    def _add_sglext(self, extension: dict[str, Any]) -> None:
        """SGLang's ids: `output_ids` one list per choice (the only one here), `input_ids` flat."""
        output = extension.get("output_ids")
        if isinstance(output, list) and output and isinstance(output[0], list):
            output = output[0]
        if isinstance(output, list):
            self.token_ids = output
        if isinstance(extension.get("input_ids"), list):
            self.prompt_ids = extension["input_ids"]

    def _add_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or choice.get("message") or {}
        text = delta.get("content") or ""
        if not isinstance(text, str):
            raise TypeError(f"delta.content is {type(text).__name__}, not a string")
        self.content_parts.append(text)  # joined once at the end: += is quadratic in events
        self.reasoning_parts.append(reasoning_text(delta))
        if isinstance(choice.get("token_ids"), list):
            if self.token_ids is None:
                self.token_ids = []
            self.token_ids.extend(choice["token_ids"])
        if isinstance(choice.get("prompt_token_ids"), list):
            self.prompt_ids = choice["prompt_token_ids"]
        if choice.get("finish_reason") is not None:
            self.finish = choice["finish_reason"]
            self.stop_reason = choice.get("stop_reason", choice.get("matched_stop"))


def reasoning_text(part: dict[str, Any]) -> str:
    """The reasoning of a message or delta, whichever field this server puts it in."""
    for name in REASONING_FIELDS:
        if isinstance(part.get(name), str):
            return str(part[name])
    details = part.get("reasoning_details")
    if isinstance(details, list):  # OpenRouter: typed parts; encrypted ones carry no text
        return "".join(
            d.get("text") or d.get("summary") or "" for d in details if isinstance(d, dict)
        )
    return ""


class ChatBackend:
    """One conversation to /v1/chat/completions; exact ids, or the text re-encoded."""

    api = "openai-chat"
    server_kind = "OpenAI-compatible"
    key_env = OPENAI_KEY_ENV

    def __init__(
        self, session: aiohttp.ClientSession, timeout_s: float, api_key: str | None,
        sampling: Sampling, reencoder: Reencoder | None, reencode: bool = False,
    ) -> None:  # fmt: skip
        self.client = OpenAIClient(session, timeout_s, api_key)
        self.sampling = sampling
        self.reencoder = reencoder
        self.reencode = reencode
        """--reencode: a text-only answer may be re-encoded; without it, it stops the run."""

    async def generate(
        self, server: Server, request: PromptRequest, timeout_s: float | None = None
    ) -> Generation:
        """One chat answer, streamed and accumulated."""
        messages = messages_of(request)
        kind = await self.client.kind_of(server)
        if kind == "router" and not self.reencode:
            raise RequestRejectedError(BEHIND_ROUTER.format(url=server.url))
        answer = ChatAnswer()
        payload = self.payload(messages, sglext=kind == "sglang", record_id=request.prompt.id)
        async for event in self.client.stream(server, "chat/completions", payload, timeout_s):
            answer.add(event)
        if answer.token_ids is not None:
            return self._exact(answer)
        if not self.reencode:
            raise RequestRejectedError(TEXT_ONLY.format(url=server.url))
        return self._reencoded(answer, messages)

    def payload(
        self, messages: list[dict[str, Any]], sglext: bool = False, record_id: str = ""
    ) -> dict[str, Any]:
        """The request body: ids asked for the way the server gives them, usage in the stream.

        The template's arguments go as `chat_template_kwargs`, which SGLang and vLLM both take
        (serving_chat.py:2166; chat_completion/protocol.py:379).
        """
        sampling = self.sampling
        template = (
            {"chat_template_kwargs": sampling.template_kwargs} if sampling.template_kwargs else {}
        )
        ids = {"return_output_ids_in_sglext": True} if sglext else {"return_token_ids": True}
        payload: dict[str, Any] = {
            "messages": messages,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            **sampling.extra_fields(record_id, "seed"),
            **template,
            **ids,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return payload | ({"model": sampling.model} if sampling.model else {})

    def _exact(self, answer: ChatAnswer) -> Generation:
        ids = answer.token_ids or []
        return Generation(
            output_ids=ids, finish_reason=runner_finish(answer.finish),
            completion_tokens=len(ids), prompt_tokens=_prompt_tokens(answer.usage),
            prompt_ids=answer.prompt_ids, stop_reason=answer.stop_reason, usage=answer.usage,
            cost=cost_of(answer.usage),
            record_fields={"tokens": "exact", "server_finish_reason": answer.finish},
        )  # fmt: skip

    def _reencoded(self, answer: ChatAnswer, messages: list[dict[str, Any]]) -> Generation:
        if self.reencoder is None:
            raise RejectedError(NO_TOKENIZER, 501)
        finish = runner_finish(answer.finish)
        prompt_ids, ids = self.reencoder.answer_ids(
            messages, answer.reasoning or None, answer.content, finish
        )  # the template's prompt ids: a text prompt was sent as one user turn
        served = (answer.usage or {}).get("completion_tokens")
        served = served if isinstance(served, int) else None
        return Generation(
            output_ids=ids, finish_reason=finish, completion_tokens=len(ids),
            prompt_tokens=_prompt_tokens(answer.usage), prompt_ids=prompt_ids,
            stop_reason=answer.stop_reason, usage=answer.usage, cost=cost_of(answer.usage),
            reencoded=True, mismatch=served is not None and served != len(ids),
            record_fields={"tokens": "reencoded", "server_completion_tokens": served,
                           "reencoded_tokens": len(ids), "server_finish_reason": answer.finish},
        )  # fmt: skip

    async def healthy(self, server: Server) -> tuple[bool, str]:
        """GET /v1/models."""
        return await self.client.healthy(server)

    async def abort(self, server: Server, rid: str) -> AbortOutcome:
        """Closing the connection is the abort."""
        return await self.client.abort(server, rid)


def messages_of(request: PromptRequest) -> list[dict[str, Any]]:
    """The conversation to send: the prompt's messages, or its text as one user turn."""
    prompt = request.prompt
    if prompt.messages is not None:
        return prompt.messages
    if prompt.text is not None:
        return [{"role": "user", "content": prompt.text}]
    raise RejectedError("a prompt given as input_ids cannot be sent to a chat API", 400)


def _prompt_tokens(usage: dict[str, Any] | None) -> int | None:
    tokens = (usage or {}).get("prompt_tokens")
    return tokens if isinstance(tokens, int) else None
