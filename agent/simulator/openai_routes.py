"""The /v1 routes of every flavour (vLLM, SGLang's own /v1, hosted), from the same engine.

A token-id prompt is planned with the same key as /generate's `input_ids`, so the same seed and
prompt ids give the same output ids through either API: the runner's backends can be compared
token for token. Shapes are in `openai_wire`, request checks in `openai_requests`, streams in
`openai_streams`, each with its sources; the hosted API's extras (429 with Retry-After,
usage.cost, an error inside a stream) follow OpenRouter's documentation (openai-compat-wire.md
§4). The sglang flavour answers chat as SGLang 0.5.23 does (§3): `return_token_ids` only without
a stream (a stream with it is a 400, serving_chat.py:1310-1320), the stream's ids in a trailing
`sglext` chunk when asked with `return_output_ids_in_sglext` (serving_chat.py:1283,2716-2760),
errors in its flat shape, and no check of the `model` name (behind sglang-router every request
says `model: "unknown"`). The vllm flavour's metrics have one series per engine
(vllm_metrics.py), and with `--vllm-dev-mode` it answers `/server_info` with vLLM's own keys, as
vLLM does with VLLM_SERVER_DEV_MODE=1 (entrypoints/serve/dev/server_info/api_router.py:43-59).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from aiohttp import web

from agent.simulator import openai_wire as wire
from agent.simulator.config import SimulatorConfig
from agent.simulator.engine import SimRequest
from agent.simulator.faults import FaultDice
from agent.simulator.flavors import FlavorSettings
from agent.simulator.openai_requests import (
    OpenAIPrompt,
    OpenAIRequestError,
    RequestRules,
    chat_prompt,
    completion_prompt,
)
from agent.simulator.openai_streams import AnswerStream, ChatStream, CompletionStream
from agent.simulator.ranks import Ranks
from agent.simulator.tokens import TokenSource
from agent.simulator.validation import PromptIn, seeded_key
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
        if self.settings.vllm_dev_mode:
            app.router.add_get("/server_info", self.vllm_server_info)
            app.router.add_post("/reset_prefix_cache", self.reset_prefix_cache)

    @property
    def model(self) -> str:
        """The served model name."""
        return self.sim.config.model_path

    @property
    def eos_id(self) -> int:
        """The end-of-sequence id, kept out of the text."""
        return self.sim.tokens.eos_id

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """A completion of one prompt, whole or streamed; token ids back when asked and served."""
        checked = await self._checked(request, completion_prompt)
        if isinstance(checked, web.Response):
            return checked
        if checked.stream:
            return await self._stream(request, CompletionStream(self, checked))
        sim = await self._generated(checked)
        answer = self._answer(sim, reasoning=False)
        body = wire.completion_body(self.model, answer, checked.prompt_ids, self.wants_ids(checked))
        return web.json_response(self.billed(body))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """A chat answer, with reasoning split off when the server runs a reasoning parser."""
        checked = await self._checked(request, chat_prompt)
        if isinstance(checked, web.Response):
            return checked
        sglang = self.settings.flavor == "sglang"
        if checked.stream and sglang and checked.return_token_ids:
            return self._error(400, SGLANG_STREAM_IDS_MESSAGE)
        if checked.stream:
            fail = self.sim.dice.hits(self.settings.stream_error_rate)
            return await self._stream(request, ChatStream(self, checked, fail))
        sim = await self._generated(checked)
        answer = self._answer(sim, reasoning=self.settings.reasoning)
        message = wire.chat_message(answer, self.settings.reasoning_fields)
        ids = self.wants_ids(checked)
        body = wire.chat_body(self.model, message, answer, checked.prompt_ids, ids and not sglang)
        if ids and sglang:
            wire.sglang_chat_ids(body["choices"][0], answer, checked.prompt_ids)
        return web.json_response(self.billed(body))

    async def models(self, request: web.Request) -> web.Response:
        """The served model and its context length."""
        owner = "sglang" if self.settings.flavor == "sglang" else "vllm"
        return web.json_response(
            wire.models_body(self.model, self.sim.config.context_length, owner)
        )

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text with vLLM's `vllm:` names, one series per engine."""
        text = vllm_metrics_text(self.sim.ranks, self.model, self.finishes)
        return web.Response(text=text, content_type="text/plain")

    async def reset_prefix_cache(self, request: web.Request) -> web.Response:
        """The dev-mode reset: `{"success": false}` while requests hold blocks.

        As vLLM's entrypoints/serve/dev/cache/api_router.py answers; the simulator keeps no cache.
        """
        busy = any(engine.running for engine in self.sim.ranks.engines)
        return web.json_response({"success": not busy})

    async def vllm_server_info(self, request: web.Request) -> web.Response:
        """The dev-mode /server_info of vLLM: its config, its VLLM_ environment, the system's."""
        return web.json_response(wire.vllm_server_info(self.model, self.sim.config.context_length))

    # ------------------------------------------------------------ helpers

    async def _checked(self, request: web.Request, parse: Any) -> OpenAIPrompt | web.Response:
        try:
            body = await request.json()
        except ValueError as exc:
            return self._error(400, f"Invalid JSON body: {exc}")
        rules = RequestRules(self.model, self.sim.config.context_length, self.settings.flavor)
        try:
            checked: OpenAIPrompt = parse(body, rules)
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
        self.finishes.count(sim.rank, self._answer(sim, reasoning=False).finish_reason)
        return sim

    def _submit(self, checked: OpenAIPrompt) -> SimRequest:
        """Plan with /generate's key for these ids, so both APIs give the same answer."""
        ids = checked.prompt_ids
        key = seeded_key(repr(ids).encode(), checked.seed)
        return self.sim.submit(PromptIn(key, len(ids), None, checked.max_tokens))

    def _answer(self, sim: SimRequest, reasoning: bool) -> wire.Answer:
        finish = "abort" if sim.aborted else sim.answer.finish
        eos = self.sim.tokens.eos_id
        return wire.split_answer(sim.produced_ids, finish, eos, reasoning)

    def wants_ids(self, checked: OpenAIPrompt) -> bool:
        """Whether the answer carries token ids: asked for, and a flavour that has them."""
        return checked.return_token_ids and self.settings.with_ids

    def billed(self, body: dict[str, Any]) -> dict[str, Any]:
        """hosted: usage.cost beside the counts (OpenRouter's usage accounting)."""
        if self.settings.flavor == "hosted":
            usage = body["usage"]
            usage["cost"] = self.settings.cost(usage["prompt_tokens"], usage["completion_tokens"])
        return body

    async def _stream(self, request: web.Request, stream: AnswerStream) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        sim = self._submit(stream.checked)
        try:
            await stream.follow(sim, response)
        except asyncio.CancelledError:  # the client went away: the server aborts the request
            self.sim.ranks.cancel(sim)
            raise
        return response
