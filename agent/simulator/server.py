"""The simulator's HTTP face: SGLang's native endpoints, answered from the simulated engine."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from agent.protocol import to_wire
from agent.simulator.engine import TICK_S, Engine, EngineSettings, SimRequest
from agent.simulator.faults import FaultDice, Faults
from agent.simulator.metrics import prometheus_text
from agent.simulator.sglang_log import SglangLog
from agent.simulator.tokens import LengthProfile, TokenSource

FLUSH_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)


@dataclass(frozen=True, slots=True)
class SimulatorConfig:
    """Everything the simulator is started with."""

    host: str = "127.0.0.1"
    port: int = 30000
    seed: int = 0
    vocab_size: int = 32000
    context_length: int = 32768
    model_path: str = "sim/eagle-target-sim"
    skip_tokenizer_init: bool = False
    log_file: Path | None = None
    port_file: Path | None = None
    lengths: LengthProfile = field(default_factory=LengthProfile)
    engine: EngineSettings = field(default_factory=EngineSettings)
    faults: Faults = field(default_factory=Faults)


class BadRequestError(Exception):
    """The request body is not a valid /generate request."""


@dataclass(frozen=True, slots=True)
class PromptIn:
    """One prompt of a /generate request."""

    key: bytes
    tokens: int
    rid: str
    max_new_tokens: int


class Simulator:
    """The aiohttp app, the engine it feeds, and the faults it injects."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self.log = SglangLog(config.log_file)
        self.engine = Engine(config.engine, self.log.line)
        self.tokens = TokenSource(config.vocab_size, config.seed)
        self.faults = config.faults
        self.dice = FaultDice(config.seed)
        self.generate_requests = 0
        self.port = config.port
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._background: set[asyncio.Task[None]] = set()

    def app(self) -> web.Application:
        """The routes a real SGLang server answers, plus /admin/faults."""
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("POST", "/generate", self.generate)
        app.router.add_route("PUT", "/generate", self.generate)
        for path in ("/health", "/health_generate"):
            app.router.add_get(path, self.health)
        for path in ("/get_server_info", "/server_info"):
            app.router.add_get(path, self.server_info)
        for path in ("/get_model_info", "/model_info"):
            app.router.add_get(path, self.model_info)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/abort_request", self.abort_request)
        app.router.add_route("*", "/flush_cache", self.flush_cache)
        app.router.add_route("*", "/admin/faults", self.admin_faults)
        return app

    async def start(self) -> None:
        """Listen, start the engine, and say so in the log as SGLang does."""
        self._runner = web.AppRunner(self.app(), handler_cancellation=True, access_log=None)
        await self._runner.setup()
        await self._open_site()
        self._spawn(self.engine.run())
        self.log.line(f"Uvicorn running on http://{self.config.host}:{self.port}")
        self.log.line("The server is fired up and ready to roll!")
        if self.config.port_file is not None:
            tmp = self.config.port_file.with_suffix(".tmp")
            tmp.write_text(str(self.port))
            tmp.replace(self.config.port_file)

    async def stop(self) -> None:
        """Stop listening and close the log."""
        for task in self._background:
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
        self.log.close()

    async def _open_site(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, self.config.host, self.port, reuse_address=True)
        await self._site.start()
        self.port = self._runner.addresses[-1][1]

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------ /generate

    async def generate(self, request: web.Request) -> web.StreamResponse:
        """SGLang's native generate: single or batch, plain JSON or an SSE stream."""
        try:
            body = await request.json()
            prompts, batch = self._prompts(body)
        except (BadRequestError, ValueError) as exc:
            return _error(400, str(exc))
        fault = await self._inject_faults()
        if fault is not None:
            return fault
        sims = [self._submit(prompt) for prompt in prompts]
        try:
            if body.get("stream"):
                return await self._stream(request, sims, batch)
            await asyncio.gather(*(sim.finished.wait() for sim in sims))
        except asyncio.CancelledError:
            for sim in sims:
                self.engine.cancel(sim)
            raise
        outputs = [self._output(sim) for sim in sims]
        return web.json_response(outputs if batch else outputs[0])

    def _prompts(self, body: Any) -> tuple[list[PromptIn], bool]:
        if not isinstance(body, dict):
            raise BadRequestError("request body must be a JSON object")
        inputs, batch = _inputs(body)
        params = body.get("sampling_params") or {}
        params_list = params if isinstance(params, list) else [params] * len(inputs)
        rids = body.get("rid")
        rid_list = rids if isinstance(rids, list) else [rids] * len(inputs)
        if len(params_list) != len(inputs) or len(rid_list) != len(inputs):
            raise BadRequestError("sampling_params and rid lists must match the number of prompts")
        return [
            self._prompt(item, sampling, rid)
            for item, sampling, rid in zip(inputs, params_list, rid_list, strict=True)
        ], batch

    def _prompt(self, item: Any, sampling: Any, rid: Any) -> PromptIn:
        max_new = sampling.get("max_new_tokens", 128) if isinstance(sampling, dict) else 128
        if not isinstance(max_new, int) or max_new < 1:
            raise BadRequestError(f"max_new_tokens must be a positive integer, got {max_new!r}")
        if isinstance(item, str):
            key, tokens = item.encode(), max(1, len(item.split()))
        elif isinstance(item, list) and all(isinstance(i, int) for i in item):
            key, tokens = json.dumps(item).encode(), len(item)
        else:
            raise BadRequestError("each prompt must be text or a list of token ids")
        if tokens + max_new > self.config.context_length:
            raise BadRequestError(
                f"Requested token count exceeds the model's maximum context length of "
                f"{self.config.context_length} tokens. You requested a total of "
                f"{tokens + max_new} tokens: {tokens} tokens from the input messages and "
                f"{max_new} tokens for the completion."
            )
        return PromptIn(key, tokens, rid if isinstance(rid, str) else uuid.uuid4().hex, max_new)

    async def _inject_faults(self) -> web.Response | None:
        self.generate_requests += 1
        faults = self.faults
        if faults.die_after_requests and self.generate_requests >= faults.die_after_requests:
            self.log.line(f"Simulated crash after {self.generate_requests} requests.")
            os._exit(1)
        if self.dice.hits(faults.error_rate):
            return _error(500, "simulated internal server error")
        if self.dice.hits(faults.hang_rate):
            await asyncio.Event().wait()
        if self.dice.hits(faults.spike_rate):
            await asyncio.sleep(self._wall_s(faults.spike_s))
        return None

    def _submit(self, prompt: PromptIn) -> SimRequest:
        answer = self.tokens.plan(
            prompt.key, prompt.max_new_tokens, self.config.lengths, prompt.tokens
        )
        sim = SimRequest(prompt.rid, prompt.tokens, answer, prompt.max_new_tokens)
        self.engine.submit(sim)
        return sim

    def _output(self, sim: SimRequest) -> dict[str, Any]:
        ids = sim.produced_ids
        meta: dict[str, Any] = {
            "id": sim.rid,
            "finish_reason": sim.finish_reason,
            "prompt_tokens": sim.prompt_tokens,
            "completion_tokens": len(ids),
            "cached_tokens": 0,
            "weight_version": "default",
            "num_retractions": 0,
        }
        if sim.finished.is_set():
            meta["e2e_latency"] = round(time.time() - sim.arrived_at, 6)
        output: dict[str, Any] = {"output_ids": ids, "meta_info": meta}
        if not self.config.skip_tokenizer_init:
            output = {"text": " ".join(f"w{token}" for token in ids)} | output
        return output

    async def _stream(
        self, request: web.Request, sims: list[SimRequest], batch: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        pending = dict(enumerate(sims))
        while pending:
            await asyncio.sleep(TICK_S)
            for index, sim in list(pending.items()):
                if not sim.progressed.is_set():
                    continue
                sim.progressed.clear()
                chunk = self._output(sim) | ({"index": index} if batch else {})
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                if sim.finished.is_set():
                    del pending[index]
        await response.write(b"data: [DONE]\n\n")
        return response

    # ------------------------------------------------------------ the rest

    async def health(self, request: web.Request) -> web.Response:
        """200 while serving, as SGLang's /health."""
        return web.Response(status=200)

    async def server_info(self, request: web.Request) -> web.Response:
        """Server args plus scheduler state, as /get_server_info returns them."""
        engine = self.engine.settings
        return web.json_response(
            {
                "model_path": self.config.model_path,
                "tokenizer_path": self.config.model_path,
                "host": self.config.host,
                "port": self.port,
                "tp_size": 1,
                "dp_size": 1,
                "context_length": self.config.context_length,
                "max_running_requests": engine.max_running_requests,
                "max_total_num_tokens": engine.max_total_tokens,
                "skip_tokenizer_init": self.config.skip_tokenizer_init,
                "speculative_algorithm": None,
                "decode_log_interval": 40,
                "internal_states": [{"last_gen_throughput": self.engine.gen_throughput}],
                "version": "0.0.0-simulator",
                "simulator": {"engine": to_wire(engine), "faults": to_wire(self.faults)},
            }
        )

    async def model_info(self, request: web.Request) -> web.Response:
        """What /get_model_info returns."""
        return web.json_response(
            {
                "model_path": self.config.model_path,
                "tokenizer_path": self.config.model_path,
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
            }
        )

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text with sglang: names."""
        text = prometheus_text(self.engine, self.config.model_path)
        return web.Response(text=text, content_type="text/plain")

    async def abort_request(self, request: web.Request) -> web.Response:
        """Abort one request by rid, or every one with abort_all."""
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "body must be JSON with rid or abort_all")
        rid = body.get("rid") if isinstance(body, dict) else None
        if not isinstance(rid, str) and not (isinstance(body, dict) and body.get("abort_all")):
            return _error(400, "give rid (a string) or abort_all: true")
        self.engine.abort(rid if isinstance(rid, str) else None)
        return web.Response(status=200)

    async def flush_cache(self, request: web.Request) -> web.Response:
        """200 when idle, 400 while anything runs or waits, as SGLang does."""
        busy = bool(self.engine.running or self.engine.queue)
        return web.Response(status=400 if busy else 200, text=FLUSH_TEXT)

    async def admin_faults(self, request: web.Request) -> web.Response:
        """GET shows the faults; POST a JSON object of changes (the simulator's own endpoint)."""
        if request.method == "POST":
            try:
                self.faults = self.faults.updated(await request.json())
            except ValueError as exc:
                return _error(400, str(exc))
            if self.faults.refuse_for_s > 0:
                self._spawn(self._outage(self.faults.refuse_for_s))
                self.faults = self.faults.updated({"refuse_for_s": 0.0})
        return web.json_response(to_wire(self.faults))

    def _wall_s(self, sim_seconds: float) -> float:
        speed = self.config.engine.speed
        return sim_seconds / speed if speed > 0 else sim_seconds

    async def _outage(self, sim_seconds: float) -> None:
        await asyncio.sleep(0.05)  # let the admin response go out first
        assert self._site is not None
        assert self._runner is not None
        await self._site.stop()
        for connection in self._runner.server.connections if self._runner.server else ():
            connection.force_close()  # keep-alive connections die too, as in a real crash
        self.log.line(f"Simulated outage: refusing connections for {sim_seconds:g} s.")
        await asyncio.sleep(self._wall_s(sim_seconds))
        await self._open_site()
        self.log.line("Simulated outage over.")


def _inputs(body: dict[str, Any]) -> tuple[list[Any], bool]:
    if "input_ids" in body and body["input_ids"] is not None:
        ids = body["input_ids"]
        batch = isinstance(ids, list) and bool(ids) and isinstance(ids[0], list)
        return (ids if batch else [ids]), batch
    if "text" in body and body["text"] is not None:
        text = body["text"]
        return (text if isinstance(text, list) else [text]), isinstance(text, list)
    raise BadRequestError("give text or input_ids")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message}}, status=status)
