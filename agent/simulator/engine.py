"""The simulated scheduler, which logs SGLang's Prefill/Decode stats lines as it goes.

A total decode rate is shared by the running requests, with a cap on how many run at once (the
rest queue).

Time is simulated: `speed` simulated seconds pass per wall second, measured on the monotonic
clock at every tick, so a tick that runs late (a busy event loop) still advances the model by the
wall time that really passed. Speed 0 means instant: every request finishes as soon as it
arrives, for benchmarks that measure the client, not the model.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.simulator.speculative import Speculation
from agent.simulator.tokens import PlannedAnswer

TICK_S = 0.02
DECODE_LOG_INTERVAL = 40
SWA_WINDOW = 4096
"""Tokens a sliding-window layer keeps per request, for the hybrid-SWA usage figures."""
"""Decode steps between two `Decode batch` lines, SGLang's --decode-log-interval default."""


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The throughput model."""

    decode_tokens_per_s: float = 5000.0
    """Total generation rate, shared by the running requests."""
    max_tokens_per_s_per_request: float = 80.0
    max_running_requests: int = 64
    max_total_tokens: int = 500_000
    """KV cache size in tokens, for `token usage`."""
    speed: float = 1.0
    hybrid_swa: bool = False
    """Log as a hybrid sliding-window model: `full token usage` and `swa token usage` lines."""
    speculation: Speculation | None = None
    """A drafter (--speculative-accept-length): verify steps instead of plain decode steps."""


@dataclass(eq=False)
class SimRequest:
    """One request inside the engine."""

    rid: str
    prompt_tokens: int
    answer: PlannedAnswer
    max_new_tokens: int
    arrived_at: float = field(default_factory=time.time)
    produced: float = 0.0
    aborted: str | None = None
    verify_steps: float = 0.0
    """Speculative verify steps it took (0 without a drafter)."""
    rank: int = 0
    """The DP rank (vLLM: engine) it was given to."""
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    progressed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def produced_ids(self) -> list[int]:
        """The ids generated so far."""
        return self.answer.output_ids[: int(self.produced)]

    @property
    def finish_reason(self) -> dict[str, object] | None:
        """SGLang's finish_reason object, or None while running (schedule_batch.py:279-345)."""
        if self.aborted is not None:
            return {"type": "abort", "message": self.aborted, "status_code": None, "err_type": None}
        if not self.finished.is_set():
            return None
        if self.answer.finish == "length":
            return {"type": "length", "length": self.max_new_tokens}
        return {"type": "stop", "matched": self.answer.output_ids[-1]}

    def advance(self, tokens: float) -> None:
        """Generate `tokens` more (fractions accumulate); finish at the planned length."""
        self.produced = min(self.produced + tokens, len(self.answer.output_ids))
        self.progressed.set()
        if self.produced >= len(self.answer.output_ids):
            self.finished.set()


class Engine:
    """Admits, advances and finishes requests; reports what a real scheduler would log."""

    def __init__(self, settings: EngineSettings, log_line: Callable[[str], None]) -> None:
        self.settings = settings
        self.log_line = log_line
        self.queue: collections.deque[SimRequest] = collections.deque()
        self.running: list[SimRequest] = []
        self.generated_tokens_total = 0
        self._generated_exact = 0.0
        """Tokens made, fractions kept: the counter is its whole part (a tick makes fractions)."""
        self.prompt_tokens_total = 0
        self.requests_total = 0
        self.gen_throughput = 0.0
        self.sim_seconds = 0.0
        """Simulated time the engine has advanced while busy."""
        self.busy_wall_s = 0.0
        """Wall time over which it advanced them: sim_seconds = busy_wall_s * speed."""
        self._steps_since_log = 0.0
        self._tokens_since_log = 0.0
        self._sim_seconds_since_log = 0.0
        self.verify_steps_total = 0.0
        self._verify_steps_since_log = 0.0
        self.accept_length = 0.0
        """The last Decode line's accept length (0 without a drafter), as the gauge holds it."""
        self.answered_decode_tokens = 0
        self.answered_verify_steps = 0
        """The decode tokens and verify steps of the answers finished, as their meta_info counts
        them: the accept length /server_info gives is theirs, not the configured one."""
        self._wake = asyncio.Event()

    @property
    def token_usage(self) -> float:
        """Share of the KV cache the running requests hold."""
        used = sum(r.prompt_tokens + int(r.produced) for r in self.running)
        return min(1.0, used / self.settings.max_total_tokens)

    def submit(self, request: SimRequest) -> None:
        """Queue a request; it runs when a slot is free."""
        self.requests_total += 1
        self.prompt_tokens_total += request.prompt_tokens
        if self.settings.speed <= 0:
            self._finish_now(request)
            return
        self.queue.append(request)
        self._wake.set()

    def abort(self, rid: str | None) -> int:
        """Abort one request by rid, or all when rid is None; returns how many.

        The messages are SGLang's: "Aborted" for a running request, "Abort in waiting queue"
        for a queued one (tokenizer_manager.py:3577-3637).
        """
        hit = 0
        for message, pool in (("Aborted", self.running), ("Abort in waiting queue", self.queue)):
            for request in [r for r in pool if rid is None or r.rid == rid]:
                request.aborted = message
                request.finished.set()
                request.progressed.set()
                pool.remove(request)
                hit += 1
        return hit

    def cancel(self, request: SimRequest) -> None:
        """Forget a request whose client went away."""
        if request in self.running:
            self.running.remove(request)
        elif request in self.queue:
            self.queue.remove(request)

    async def run(self) -> None:
        """Advance the simulation forever, by the wall time that really passed at each tick."""
        last = time.monotonic()
        while True:
            if not self.running and not self.queue:
                self._wake.clear()
                await self._wake.wait()
                last = time.monotonic()  # idle time is not simulated
            self._admit()
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self.busy_wall_s += now - last
            self._tick((now - last) * self.settings.speed)
            last = now

    def _finish_now(self, request: SimRequest) -> None:
        gained = len(request.answer.output_ids) - request.produced
        request.produced = len(request.answer.output_ids)
        if self.settings.speculation is not None:
            steps = gained / self.settings.speculation.accept_length
            request.verify_steps += steps
            self.verify_steps_total += steps
        self._count_generated(gained)
        request.finished.set()
        request.progressed.set()
        self._count_answered([request])

    def _count_answered(self, finished: list[SimRequest]) -> None:
        """Add the answers just finished (not aborted) to the counts their meta_info gives."""
        speculation = self.settings.speculation
        if speculation is None:
            return
        for request in finished:
            if request.aborted is None:
                completion = len(request.answer.output_ids)
                self.answered_decode_tokens += max(0, completion - 1)
                self.answered_verify_steps += speculation.verify_count(completion)

    def _drop_finished(self) -> None:
        """Running requests that finished leave the batch, and are counted."""
        self._count_answered([r for r in self.running if r.finished.is_set()])
        self.running = [r for r in self.running if not r.finished.is_set()]

    def _admit(self) -> None:
        """Fill the free slots, and only those: never more than max_running_requests run."""
        room = self.settings.max_running_requests - len(self.running)
        admitted = [self.queue.popleft() for _ in range(min(max(room, 0), len(self.queue)))]
        if admitted:
            self.running.extend(admitted)
            self._log_prefill(admitted)

    def _tick(self, sim_seconds: float) -> None:
        self.sim_seconds += sim_seconds
        if not self.running:
            return
        speculation = self.settings.speculation
        if speculation is not None:
            self._tick_speculative(speculation, sim_seconds)
            return
        per_request = (
            min(
                self.settings.decode_tokens_per_s / len(self.running),
                self.settings.max_tokens_per_s_per_request,
            )
            * sim_seconds
        )
        before = sum(r.produced for r in self.running)
        for request in self.running:
            request.advance(per_request)
        made = sum(r.produced for r in self.running) - before
        self._count_generated(made)
        self._account(per_request, made, sim_seconds)
        self._drop_finished()

    def _tick_speculative(self, speculation: Speculation, sim_seconds: float) -> None:
        """Verify steps: each yields `accept_length` tokens per request, at a higher cost."""
        steps = sim_seconds * speculation.steps_per_request(
            self.settings.decode_tokens_per_s,
            self.settings.max_tokens_per_s_per_request,
            len(self.running),
        )
        made = 0.0
        for request in self.running:
            before = request.produced
            request.advance(steps * speculation.accept_length)
            gained = request.produced - before
            request.verify_steps += gained / speculation.accept_length
            made += gained
        self.verify_steps_total += made / speculation.accept_length
        self._verify_steps_since_log += made / speculation.accept_length
        self._count_generated(made)
        self._account(steps, made, sim_seconds)
        self._drop_finished()

    def _count_generated(self, tokens: float) -> None:
        self._generated_exact += tokens
        self.generated_tokens_total = int(self._generated_exact)

    def _account(self, steps: float, tokens: float, sim_seconds: float) -> None:
        self._steps_since_log += steps
        self._tokens_since_log += tokens
        self._sim_seconds_since_log += sim_seconds
        if self._steps_since_log >= DECODE_LOG_INTERVAL:
            self.gen_throughput = self._tokens_since_log / max(self._sim_seconds_since_log, 1e-9)
            self._log_decode()
            self._steps_since_log = self._tokens_since_log = self._sim_seconds_since_log = 0.0
            self._verify_steps_since_log = 0.0

    def _log_decode(self) -> None:
        """SGLang 0.5's line (metrics_reporter.py:963-1041; usage parts pool_stats_observer.py:118-150)."""
        speculation = self.settings.speculation
        accept = ""
        if speculation is not None:
            accept = speculation.log_part(self._tokens_since_log, self._verify_steps_since_log)
            self.accept_length = self._tokens_since_log / max(self._verify_steps_since_log, 1e-9)
        self.log_line(
            f"Decode batch, #running-req: {len(self.running)}, {self._usage_parts(decode=True)}, "
            f"{accept}cuda graph: True, gen throughput (token/s): {self.gen_throughput:.2f}, "
            f"#queue-req: {len(self.queue)}"
        )

    def _log_prefill(self, admitted: list[SimRequest]) -> None:
        """SGLang 0.5's line (metrics_reporter.py:753-783)."""
        new_tokens = sum(r.prompt_tokens for r in admitted)
        self.log_line(
            f"Prefill batch, #new-seq: {len(admitted)}, #new-token: {new_tokens}, "
            f"#cached-token: 0, {self._usage_parts(decode=False)}, "
            f"#running-req: {len(self.running) - len(admitted)}, #queue-req: {len(self.queue)}, "
            f"#pending-token: 0, cuda graph: False, input throughput (token/s): 0.00"
        )

    def _usage_parts(self, *, decode: bool) -> str:
        used = sum(r.prompt_tokens + int(r.produced) for r in self.running)
        usage = f"{self.token_usage:.2f}"
        if not self.settings.hybrid_swa:
            return f"#token: {used}, token usage: {usage}" if decode else f"token usage: {usage}"
        swa_used = sum(min(r.prompt_tokens + int(r.produced), SWA_WINDOW) for r in self.running)
        swa_usage = f"{min(1.0, swa_used / self.settings.max_total_tokens):.2f}"
        if decode:
            return (
                f"#full token: {used}, full token usage: {usage}, "
                f"#swa token: {swa_used}, swa token usage: {swa_usage}"
            )
        return f"full token usage: {usage}, swa token usage: {swa_usage}"
