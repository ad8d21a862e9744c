"""The /v1 SSE streams: chat and completions, written as the engine produces the answer.

vLLM 0.34.0 (trainers-and-servers-2026-12.md): a completion stream's first chunk carries the
prompt ids, every chunk its text and `token_ids` delta with `return_token_ids`, the last one
the finish reason, then a usage chunk with no choices (with `include_usage`) and `[DONE]`
(entrypoints/openai/completion/serving.py:343-626); a chat stream likewise, the prompt ids at
the top of the first chunk (chat_completion/serving.py:473-508, 608-620). SGLang's chat stream
ends with a `sglext.output_ids` chunk when asked (serving_chat.py:1283,2716-2760). A hosted
API can fail after the stream began: an error event, HTTP 200 already sent (OpenRouter's docs).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from aiohttp import web

from agent.simulator import openai_wire as wire
from agent.simulator.engine import TICK_S, SimRequest
from agent.simulator.flavors import FlavorSettings
from agent.simulator.openai_requests import OpenAIPrompt
from agent.simulator.vllm_metrics import FinishCounts


class StreamHost(Protocol):
    """What a stream uses of the routes that opened it."""

    settings: FlavorSettings
    finishes: FinishCounts

    @property
    def model(self) -> str:
        """The served model name."""
        ...

    @property
    def eos_id(self) -> int:
        """The end-of-sequence id, kept out of the text."""
        ...

    def wants_ids(self, checked: OpenAIPrompt) -> bool:
        """Whether the answer carries token ids."""
        ...

    def billed(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body with usage.cost where the flavour bills."""
        ...


class AnswerStream:
    """One stream: a delta per engine step, then the finish, the usage and [DONE]."""

    kind = "chat.completion.chunk"

    def __init__(self, host: StreamHost, checked: OpenAIPrompt, fail: bool = False) -> None:
        self.host = host
        self.checked = checked
        self.out = web.StreamResponse()
        """The response being written; `follow` is given the prepared one."""
        self.chunk_id = wire.new_id("chatcmpl")
        self.sent = 0
        self.fail = fail
        """Fail after the first delta, as a hosted API's stream can (--stream-error-rate)."""

    async def follow(self, sim: SimRequest, out: web.StreamResponse) -> None:
        """Write deltas to `out` until the request is done (or the simulated failure strikes)."""
        self.out = out
        await self._first()
        while True:
            await asyncio.sleep(TICK_S)
            if not sim.progressed.is_set():
                continue
            sim.progressed.clear()
            done = sim.finished.is_set()
            await self._delta(sim, None)
            if self.fail:
                await self._write_error()
                return
            if done:
                break
        await self._finish(sim)

    async def _first(self) -> None:
        """Nothing before the first delta (a chat stream opens with the assistant's role)."""

    async def _delta(self, sim: SimRequest, finish: str | None) -> None:
        raise NotImplementedError

    def _new_ids(self, sim: SimRequest) -> list[int]:
        ids = sim.produced_ids
        new, self.sent = ids[self.sent :], len(ids)
        return new

    async def _finish(self, sim: SimRequest) -> None:
        finish = "abort" if sim.aborted else sim.answer.finish
        self.host.finishes.count(sim.rank, finish)
        await self._delta(sim, finish)
        if self.checked.include_usage:
            usage = wire.usage(len(self.checked.prompt_ids), len(sim.produced_ids))
            chunk = self._chunk([]) | self.host.billed({"usage": usage})
            await self._write(chunk)
        if self.checked.output_ids_in_sglext and self.host.settings.flavor == "sglang":
            await self._write(wire.sglext_chunk(self.chunk_id, self.host.model, sim.produced_ids))
        await self.out.write(b"data: [DONE]\n\n")

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return wire.stream_chunk(self.chunk_id, self.kind, self.host.model, choices)

    async def _write(self, chunk: dict[str, Any]) -> None:
        await self.out.write(f"data: {json.dumps(chunk)}\n\n".encode())

    async def _write_error(self) -> None:
        """A failure after the stream began: HTTP 200 already sent, so an error event instead."""
        body = wire.hosted_error(502, "Provider returned error") | {
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
        }
        await self._write(body)


class ChatStream(AnswerStream):
    """A chat stream: content and reasoning deltas, ids per chunk where the flavour gives them."""

    async def _first(self) -> None:
        chunk = self._chunk([_choice({"delta": {"role": "assistant", "content": ""}}, None)])
        if self.host.wants_ids(self.checked):
            chunk["prompt_token_ids"] = self.checked.prompt_ids
        await self._write(chunk)

    async def _delta(self, sim: SimRequest, finish: str | None) -> None:
        before = self.sent
        ids = self._new_ids(sim) if finish is None else []
        delta = self._text_delta(sim, before) if finish is None else {}
        choice = _choice({"delta": delta}, finish)
        if finish is not None:
            choice["stop_reason"] = None
        elif self.host.wants_ids(self.checked):
            choice["token_ids"] = ids
        await self._write(self._chunk([choice]))

    def _text_delta(self, sim: SimRequest, before: int) -> dict[str, Any]:
        host, planned = self.host, sim.answer.output_ids
        reasoning = host.settings.reasoning
        then = wire.split_answer(planned, "", host.eos_id, reasoning, done=before)
        now = wire.split_answer(planned, "", host.eos_id, reasoning, done=self.sent)
        delta: dict[str, Any] = {"content": _tail(now.content, then.content)}
        if reasoning:
            for name in host.settings.reasoning_fields:
                if name != "reasoning_details":
                    delta[name] = _tail(now.reasoning or "", then.reasoning or "")
        return delta


class CompletionStream(AnswerStream):
    """A completion stream (vLLM's): text and `token_ids` deltas, the prompt ids first."""

    kind = "text_completion"

    def __init__(self, host: StreamHost, checked: OpenAIPrompt) -> None:
        super().__init__(host, checked)
        self.chunk_id = wire.new_id("cmpl")
        self.prompt_sent = False

    async def _delta(self, sim: SimRequest, finish: str | None) -> None:
        before = self.sent
        ids = self._new_ids(sim)
        planned, eos = sim.answer.output_ids, self.host.eos_id
        then = wire.split_answer(planned, "", eos, False, done=before).content
        now = wire.split_answer(planned, "", eos, False, done=self.sent).content
        choice = _choice({"text": _tail(now, then)}, finish) | {"stop_reason": None}
        if self.host.wants_ids(self.checked):
            choice["token_ids"] = ids
            if not self.prompt_sent:  # the first chunk only (completion/serving.py:446-450)
                choice["prompt_token_ids"] = self.checked.prompt_ids
                self.prompt_sent = True
        await self._write(self._chunk([choice]))


def _choice(fields: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {"index": 0, **fields, "logprobs": None, "finish_reason": finish}


def _tail(now: str, before: str) -> str:
    """The text added since `before` (the words are joined with spaces)."""
    if not before:
        return now
    return now[len(before) :]
