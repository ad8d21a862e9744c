"""The /v1 routes of every flavour (vLLM, SGLang's own /v1, hosted), from the same engine.

A token-id prompt is planned with the same key as /generate's `input_ids`, so the same seed and
prompt ids give the same output ids through either API: the runner's backends can be compared
token for token. Shapes are in `openai_wire`, request checks in `openai_requests`, both with their
sources; the hosted API's extras (429 with Retry-After, usage.cost, an error inside a stream)
follow OpenRouter's documentation (openai-compat-wire.md §4). The sglang flavour answers chat
as SGLang 0.5.23 does (§3): `return_token_ids` only without a stream (a stream with it is a 400,
serving_chat.py:1310-1320), the stream's ids in a trailing `sglext` chunk when asked with
`return_output_ids_in_sglext` (serving_chat.py:1283,2716-2760), errors in its flat shape.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from aiohttp import web

from agent.simulator import openai_wire as wire
from agent.simulator.config import SimulatorConfig
from agent.simulator.engine import TICK_S, SimRequest
from agent.simulator.faults import FaultDice
from agent.simulator.flavors import FlavorSettings
from agent.simulator.openai_requests import (
    OpenAIPrompt,
    OpenAIRequestError,
    chat_prompt,
    completion_prompt,
)
from agent.simulator.ranks import Ranks
from agent.simulator.tokens import TokenSource
from agent.simulator.validation import PromptIn
from agent.simulator.vllm_metrics import FinishCounts, vllm_metrics_text


class SimulatorCore(Protocol):
    """What the OpenAI routes use of the simulator: its config, ranks, tokens and dice."""

    config: SimulatorConfig
    ranks: Ranks
    tokens: TokenSource
    dice: FaultDice

    def submit(self, prompt: PromptIn) -> SimRequest:
        """Queue a prompt on a rank."""
        ...


RATE_LIMIT_MESSAGE = "Rate limit exceeded: free-models-per-min. "
SGLANG_STREAM_IDS_MESSAGE = (  # paraphrased: serving_chat.py:1310-1320 refuses the combination
    "return_token_ids is not supported for streaming chat completions; "
    "use return_output_ids_in_sglext"
)


class OpenAIRoutes:
    """/v1/completions, /v1/chat/completions, /v1/models and vLLM's /metrics."""

    def __init__(self, simulator: SimulatorCore, settings: FlavorSettings) -> None:
        self.sim = simulator
        self.settings = settings
        self.finishes = FinishCounts()

    def add_to(self, app: web.Application) -> None:
        """Register the routes a vLLM server (or a hosted API) answers."""
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/v1/models", self.models)
        if self.settings.flavor == "vllm":
            app.router.add_get("/metrics", self.metrics)

    @property
    def model(self) -> str:
        """The served model name."""
        return self.sim.config.model_path

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """A completion of one prompt; token ids back when asked and served."""
        checked = await self._checked(request, completion_prompt)
        if isinstance(checked, web.Response):
            return checked
        if checked.stream:
            return self._error(400, "streaming /v1/completions is not simulated; use chat")
        sim = await self._generated(checked)
        answer = self._answer(sim, reasoning=False)
        body = wire.completion_body(self.model, answer, checked.prompt_ids, self._ids(checked))
        return web.json_response(self._billed(body))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """A chat answer, with reasoning split off when the server runs a reasoning parser."""
        checked = await self._checked(request, chat_prompt)
        if isinstance(checked, web.Response):
            return checked
        sglang = self.settings.flavor == "sglang"
        if checked.stream and sglang and checked.return_token_ids:
            return self._error(400, SGLANG_STREAM_IDS_MESSAGE)
        if checked.stream:
            return await self._chat_stream(request, checked)
        sim = await self._generated(checked)
        answer = self._answer(sim, reasoning=self.settings.reasoning)
        message = wire.chat_message(answer, self.settings.reasoning_fields)
        ids = self._ids(checked)
        body = wire.chat_body(self.model, message, answer, checked.prompt_ids, ids and not sglang)
        if ids and sglang:
            wire.sglang_chat_ids(body["choices"][0], answer, checked.prompt_ids)
        return web.json_response(self._billed(body))

    async def models(self, request: web.Request) -> web.Response:
        """The served model and its context length."""
        return web.json_response(wire.models_body(self.model, self.sim.config.context_length))

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text with vLLM's `vllm:` names."""
        text = vllm_metrics_text(self.sim.ranks, self.model, self.finishes)
        return web.Response(text=text, content_type="text/plain")

    # ------------------------------------------------------------ helpers

    async def _checked(self, request: web.Request, parse: Any) -> OpenAIPrompt | web.Response:
        try:
            body = await request.json()
        except ValueError as exc:
            return self._error(400, f"Invalid JSON body: {exc}")
        try:
            checked: OpenAIPrompt = parse(body, self.model, self.sim.config.context_length)
        except OpenAIRequestError as exc:
            return self._error(exc.status, str(exc))
        return self._rate_limited() or checked

    def _rate_limited(self) -> web.Response | None:
        """hosted: a 429 with Retry-After, on a seeded share of requests."""
        if self.settings.flavor != "hosted" or not self.sim.dice.hits(
            self.settings.rate_limit_rate
        ):
            return None
        response = self._error(429, RATE_LIMIT_MESSAGE)
        response.headers["Retry-After"] = f"{self.settings.retry_after_s:g}"
        return response

    def _error(self, status: int, message: str) -> web.Response:
        shapes = {"hosted": wire.hosted_error, "sglang": wire.sglang_error}
        body = shapes.get(self.settings.flavor, wire.vllm_error)(status, message)
        return web.json_response(body, status=status)

    async def _generated(self, checked: OpenAIPrompt) -> SimRequest:
        sim = self._submit(checked)
        try:
            await sim.finished.wait()
        except asyncio.CancelledError:  # the client went away: vLLM aborts the request
            self.sim.ranks.cancel(sim)
            raise
        self.finishes.count(self._answer(sim, reasoning=False).finish_reason)
        return sim

    def _submit(self, checked: OpenAIPrompt) -> SimRequest:
        """Plan with /generate's key for these ids, so both APIs give the same answer."""
        ids = checked.prompt_ids
        return self.sim.submit(PromptIn(repr(ids).encode(), len(ids), None, checked.max_tokens))

    def _answer(self, sim: SimRequest, reasoning: bool) -> wire.Answer:
        finish = "abort" if sim.aborted else sim.answer.finish
        eos = self.sim.tokens.eos_id
        return wire.split_answer(sim.produced_ids, finish, eos, reasoning)

    def _ids(self, checked: OpenAIPrompt) -> bool:
        return checked.return_token_ids and self.settings.with_ids

    def _billed(self, body: dict[str, Any]) -> dict[str, Any]:
        """hosted: usage.cost beside the counts (OpenRouter's usage accounting)."""
        if self.settings.flavor == "hosted":
            usage = body["usage"]
            usage["cost"] = self.settings.cost(usage["prompt_tokens"], usage["completion_tokens"])
        return body

    async def _chat_stream(self, request: web.Request, checked: OpenAIPrompt) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        stream = ChatStream(self, checked, response)
        sim = self._submit(checked)
        try:
            await stream.follow(sim)
        except asyncio.CancelledError:
            self.sim.ranks.cancel(sim)
            raise
        return response


class ChatStream:
    """One chat stream: deltas as the engine produces them, then finish, usage and [DONE]."""

    def __init__(self, routes: OpenAIRoutes, checked: OpenAIPrompt, out: web.StreamResponse):
        self.routes = routes
        self.checked = checked
        self.out = out
        self.chunk_id = wire.new_id("chatcmpl")
        self.sent = 0
        self.fail = routes.sim.dice.hits(routes.settings.stream_error_rate)

    async def follow(self, sim: SimRequest) -> None:
        """Write deltas until the request is done (or the simulated failure strikes)."""
        await self._write(self._first_delta(), None, prompt_ids=True)
        while True:
            await asyncio.sleep(TICK_S)
            if not sim.progressed.is_set():
                continue
            sim.progressed.clear()
            done = sim.finished.is_set()
            await self._write(self._delta(sim), None)
            if self.fail:
                await self._write_error()
                return
            if done:
                break
        await self._finish(sim)

    def _first_delta(self) -> dict[str, Any]:
        return {"role": "assistant", "content": ""}

    def _delta(self, sim: SimRequest) -> dict[str, Any]:
        routes = self.routes
        ids = sim.produced_ids
        eos = routes.sim.tokens.eos_id
        reasoning = routes.settings.reasoning
        full = wire.split_answer(sim.answer.output_ids, "", eos, reasoning)
        before = wire.split_answer(sim.answer.output_ids, "", eos, reasoning, done=self.sent)
        now = wire.split_answer(sim.answer.output_ids, "", eos, reasoning, done=len(ids))
        delta: dict[str, Any] = {"content": _tail(now.content, before.content)}
        if reasoning and full.reasoning is not None:
            for name in routes.settings.reasoning_fields:
                if name != "reasoning_details":
                    delta[name] = _tail(now.reasoning or "", before.reasoning or "")
        if self.routes._ids(self.checked):
            delta_ids = ids[self.sent :]
            self.sent = len(ids)
            return {"delta": delta, "token_ids": delta_ids}
        self.sent = len(ids)
        return {"delta": delta}

    async def _write(
        self, delta: dict[str, Any], finish: str | None, prompt_ids: bool = False
    ) -> None:
        inner = delta.get("delta", delta)
        chunk = wire.chat_chunk(self.chunk_id, self.routes.model, inner, finish)
        if "token_ids" in delta:
            chunk["choices"][0]["token_ids"] = delta["token_ids"]
        if prompt_ids and self.routes._ids(self.checked):
            chunk["prompt_token_ids"] = self.checked.prompt_ids
        await self.out.write(f"data: {json.dumps(chunk)}\n\n".encode())

    async def _write_error(self) -> None:
        """A failure after the stream began: HTTP 200 already sent, so an error event instead."""
        status = 502
        body = wire.hosted_error(status, "Provider returned error") | {
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
        }
        await self.out.write(f"data: {json.dumps(body)}\n\n".encode())

    async def _finish(self, sim: SimRequest) -> None:
        finish = "abort" if sim.aborted else sim.answer.finish
        self.routes.finishes.count(finish)
        chunk = wire.chat_chunk(self.chunk_id, self.routes.model, {}, finish)
        chunk["choices"][0]["stop_reason"] = None
        await self.out.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if self.checked.include_usage:
            usage = wire.usage(len(self.checked.prompt_ids), len(sim.produced_ids))
            tail = self.routes._billed({"usage": usage})
            final = wire.chat_chunk(self.chunk_id, self.routes.model, {}, None)
            final["choices"] = []
            await self.out.write(f"data: {json.dumps(final | tail)}\n\n".encode())
        if self.checked.output_ids_in_sglext and self.routes.settings.flavor == "sglang":
            ids = wire.sglext_chunk(self.chunk_id, self.routes.model, list(sim.produced_ids))
            await self.out.write(f"data: {json.dumps(ids)}\n\n".encode())
        await self.out.write(b"data: [DONE]\n\n")


def _tail(now: str, before: str) -> str:
    """The text added since `before` (the words are joined with spaces)."""
    if not before:
        return now
    return now[len(before) :]
