"""The simulator's HTTP face: SGLang's native endpoints, answered from the simulated engine."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from typing import Any

from aiohttp import web

from agent.protocol import to_wire
from agent.simulator import flush, info
from agent.simulator.auth import api_key_middleware
from agent.simulator.config import SimulatorConfig
from agent.simulator.engine import TICK_S, SimRequest
from agent.simulator.faults import FaultDice
from agent.simulator.metrics import prometheus_text
from agent.simulator.openai_routes import OpenAIRoutes
from agent.simulator.ranks import Ranks
from agent.simulator.sglang_log import SglangLog, quiet_bad_requests
from agent.simulator.tokens import TokenSource
from agent.simulator.validation import (
    ContractError,
    PromptIn,
    RequestValueError,
    check_contract,
    prompts_of,
)

SHUTDOWN_GRACE_S = 3.0
"""Requests in flight at a stop get this long to finish, then are cut (aiohttp's default waits
60 s: with 64 long generations under way, only SIGKILL stopped the simulator)."""


class Simulator:
    """The aiohttp app, the DP ranks it feeds, and the faults it injects."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self.log = SglangLog(config.log_file)
        self.ranks = Ranks(config.engine, config.dp_size, self.log)
        self.tokens = TokenSource(config.vocab_size, config.seed, config.stop_id)
        self.faults = config.faults
        self.dice = FaultDice(config.seed)
        self.generate_requests = 0
        self.port = config.port
        self.ready = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._background: set[asyncio.Task[None]] = set()

    def app(self) -> web.Application:
        """The routes the flavour's real server answers, plus /admin/faults."""
        middlewares = [api_key_middleware(self.config.api_key)] if self.config.api_key else []
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=middlewares)
        app.router.add_route("*", "/admin/faults", self.admin_faults)
        OpenAIRoutes(self, self.config.flavor).add_to(app)
        if not self.config.flavor.native:
            app.router.add_get("/health", self.health)
            return app
        app.router.add_route("POST", "/generate", self.generate)
        app.router.add_route("PUT", "/generate", self.generate)
        for path in ("/health", "/health_generate", "/ready"):
            app.router.add_get(path, self.health)
        app.router.add_get("/server_info", self.server_info)
        app.router.add_get("/model_info", self.model_info)
        for path in ("/get_server_info", "/get_model_info", "/get_load"):
            app.router.add_get(path, self.deprecated)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_post("/abort_request", self.abort_request)
        for method in ("GET", "POST"):  # http_server.py:1025
            app.router.add_route(method, "/flush_cache", self.flush_cache)
        return app

    async def start(self) -> None:
        """Listen, start the engines, warm up, and say so in the log as SGLang does."""
        quiet_bad_requests(self.log)
        self._runner = web.AppRunner(
            self.app(), handler_cancellation=True, access_log=None,
            shutdown_timeout=SHUTDOWN_GRACE_S,
        )  # fmt: skip
        await self._runner.setup()
        await self._open_site()
        self._spawn(self.ranks.run())
        self.log.line(f"Uvicorn running on http://{self.config.host}:{self.port}")
        if self.config.warmup_s > 0:
            self._spawn(self._warm_up())
        else:
            self._up()
        if self.config.port_file is not None:
            tmp = self.config.port_file.with_suffix(".tmp")
            tmp.write_text(str(self.port))
            tmp.replace(self.config.port_file)

    async def _warm_up(self) -> None:
        self.log.line(f"Simulated warm-up: /health answers 503 for {self.config.warmup_s:g} s.")
        await asyncio.sleep(self._wall_s(self.config.warmup_s))
        self._up()

    def _up(self) -> None:
        self.ready.set()
        self.log.line("The server is fired up and ready to roll!")

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
            check_contract(body)
        except ContractError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        except ValueError as exc:
            return _object_error(400, f"Invalid JSON body: {exc}", "Bad Request")
        try:
            prompts, batch = prompts_of(body, self.config.context_length)
        except RequestValueError as exc:
            if body.get("stream"):
                return await _stream_error(request, str(exc))
            return _value_error(str(exc))
        fault = await self._inject_faults()
        if fault is not None:
            return fault
        sims = [self.submit(prompt) for prompt in prompts]
        try:
            if body.get("stream"):
                return await self._stream(request, sims, batch)
            await asyncio.gather(*(sim.finished.wait() for sim in sims))
        except asyncio.CancelledError:
            for sim in sims:
                self.ranks.cancel(sim)
            raise
        outputs = [self._output(sim) for sim in sims]
        return web.json_response(outputs if batch else outputs[0])

    async def _inject_faults(self) -> web.Response | None:
        self.generate_requests += 1
        faults = self.faults
        if faults.die_after_requests and self.generate_requests >= faults.die_after_requests:
            self.log.line(f"Simulated crash after {self.generate_requests} requests.")
            os._exit(1)
        if self.dice.hits(faults.error_rate):
            return _object_error(500, "simulated internal server error", "500")
        if self.dice.hits(faults.hang_rate):
            await asyncio.Event().wait()
        if self.dice.hits(faults.spike_rate):
            await asyncio.sleep(self._wall_s(faults.spike_s))
        return None

    def submit(self, prompt: PromptIn) -> SimRequest:
        """Plan one prompt's answer and queue it on a rank."""
        answer = self.tokens.plan(
            prompt.key, prompt.max_new_tokens, self.config.lengths, prompt.tokens,
            prompt.ignore_eos,
        )  # fmt: skip
        rid = prompt.rid or uuid.uuid4().hex
        sim = SimRequest(rid, prompt.tokens, answer, prompt.max_new_tokens)
        self.ranks.submit(sim)
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
        if sim.aborted == "Abort in waiting queue":  # tokenizer_manager.py:3577-3637
            del meta["prompt_tokens"], meta["cached_tokens"]
        if sim.finished.is_set():
            meta["e2e_latency"] = round(time.time() - sim.arrived_at, 6)
            speculation = self.config.engine.speculation
            if speculation is not None and sim.aborted is None:  # tokenizer_manager.py:2755-2756
                meta |= speculation.meta_info(len(ids), sim.verify_steps)
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
        """503 while warming up, then 200, as SGLang's /health (http_server.py:721-799)."""
        return web.Response(status=200 if self.ready.is_set() else 503)

    async def server_info(self, request: web.Request) -> web.Response:
        """Server args plus per-rank scheduler state."""
        return web.json_response(info.server_info(self.config, self.ranks, self.port))

    async def model_info(self, request: web.Request) -> web.Response:
        """The model's identity."""
        return web.json_response(info.model_info(self.config))

    async def deprecated(self, request: web.Request) -> web.Response:
        """The old `get_` paths: the same answer, and a WARNING in the log on every call.

        http_server.py:802-809 and 853-860; /get_load in sglang 0.5.8 http_server.py:601-608.
        """
        new = {"/get_load": "/v1/loads"}.get(request.path, request.path.replace("/get_", "/"))
        self.log.line(
            f"Endpoint '{request.path}' is deprecated and will be removed in a future version. "
            f"Please use '{new}' instead."
        )
        if request.path == "/get_load":
            return web.json_response(info.loads(self.ranks))
        if request.path == "/get_model_info":
            return await self.model_info(request)
        return await self.server_info(request)

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text with sglang: names, one series per DP rank."""
        text = prometheus_text(self.ranks, self.config.model_path)
        return web.Response(text=text, content_type="text/plain")

    async def abort_request(self, request: web.Request) -> web.Response:
        """Abort by rid, or all with abort_all; always 200 (http_server.py:1721-1731).

        Without a rid and without abort_all SGLang aborts nothing and logs a warning
        (tokenizer_manager.py:2241-2245).
        """
        try:
            body = await request.json()
        except ValueError as exc:
            return _object_error(400, f"Invalid JSON body: {exc}", "Bad Request")
        body = body if isinstance(body, dict) else {}
        rid, abort_all = body.get("rid") or "", bool(body.get("abort_all"))
        if not abort_all and not rid:
            self.log.line("Ignore abort_request with empty rid and abort_all=False")
            return web.Response(status=200)
        self.ranks.abort(None if abort_all else str(rid))
        return web.Response(status=200)

    async def flush_cache(self, request: web.Request) -> web.Response:
        """200 when flushed, 400 while requests run past the `timeout` query (flush.py)."""
        try:
            timeout_s = flush.flush_timeout(request.query.get("timeout"))
        except ValueError as exc:
            return _object_error(400, str(exc), "Bad Request")
        result = await flush.flush_cache(self.ranks, timeout_s)
        return web.Response(status=200 if result.success else 400, text=result.text)

    async def admin_faults(self, request: web.Request) -> web.Response:
        """GET shows the faults; POST a JSON object of changes (the simulator's own endpoint)."""
        if request.method == "POST":
            try:
                self.faults = self.faults.updated(await request.json())
            except ValueError as exc:
                return _value_error(str(exc))
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


def _value_error(message: str) -> web.Response:
    """A ValueError's answer: 400 `{"error": {"message": ...}}` (http_server.py:2246-2250)."""
    return web.json_response({"error": {"message": message}}, status=400)


def _object_error(status: int, message: str, kind: str) -> web.Response:
    """The ErrorResponse shape of body errors and HTTPExceptions (http_server.py:578-692)."""
    body = {"object": "error", "message": message, "type": kind, "param": None, "code": status}
    return web.json_response(body, status=status)


async def _stream_error(request: web.Request, message: str) -> web.StreamResponse:
    """A ValueError in a stream: HTTP 200, one error event, then [DONE] (http_server.py:947-975)."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    error = {"message": message, "type": "invalid_request_error", "code": 400, "retryable": False}
    await response.write(f"data: {json.dumps({'error': error})}\n\n".encode())
    await response.write(b"data: [DONE]\n\n")
    return response
