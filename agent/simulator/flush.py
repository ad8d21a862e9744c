"""`/flush_cache` and the decode-pass accept length it resets, per DP rank, as in SGLang 0.5.23.

Paths are under `sglang/srt/` in the sglang 0.5.23 wheel.

- The route (entrypoints/http_server.py:1025-1041): GET or POST, query `timeout` (seconds, a
  float from 0, default 0). 200 with FLUSHED_TEXT when rank 0 flushed, else 400 with its message,
  or FAILED_TEXT when it has none.
- Each DP rank (managers/scheduler_components/flush_wrapper.py:22-60; managers/scheduler.py:
  5518-5545): idle, it flushes and resets its metrics; busy with no timeout, it refuses and logs
  why; with a timeout it waits for idle and answers "Timed out waiting for idle state." at the
  deadline; a second flush while one waits gets "Another flush_cache is already in progress.".
  The request goes to every DP rank (managers/tokenizer_control_mixin.py:186-197) and the answer
  is rank 0's (tokenizer_control_mixin.py:325-333).
- `avg_spec_accept_length` in `/server_info` (managers/scheduler_components/internal_state.py:
  119-125, 243-253): accepted tokens per decode pass since start or the last flush
  (`reset_metrics`, metrics_reporter.py:707-716), the prefill's token not counted, folded in at
  each Decode line (metrics_reporter.py:934, 996-1000): absent until the first one. Here it is
  the decode tokens over the verify steps of the answers finished since the flush, as their
  meta_info counts them (so it agrees with the answers, 2.57 where the drafter is set to 2.6),
  the configured length while none has finished; the first fold comes once a rank has made
  DECODE_LOG_INTERVAL verify steps since the flush (SGLang counts batches, the engine requests).
  A rank at --speed 0 makes no steps, so it never reports one.

It must not touch the engine's internals: it reads its public counters and queues only.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from dataclasses import dataclass

from agent.simulator.engine import DECODE_LOG_INTERVAL, TICK_S, Engine
from agent.simulator.ranks import Ranks

FLUSHED_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)
FAILED_TEXT = "Flush cache failed.\n"
TIMED_OUT = "Timed out waiting for idle state."
ANOTHER_PENDING = "Another flush_cache is already in progress."

_steps_at_flush: weakref.WeakKeyDictionary[Engine, float] = weakref.WeakKeyDictionary()
_answered_at_flush: weakref.WeakKeyDictionary[Engine, tuple[int, int]] = weakref.WeakKeyDictionary()
_pending: weakref.WeakSet[Engine] = weakref.WeakSet()


@dataclass(frozen=True, slots=True)
class FlushResult:
    """One rank's answer: FlushCacheReqOutput (managers/io_struct.py:1859-1861)."""

    success: bool
    message: str = ""

    @property
    def text(self) -> str:
        """The HTTP body SGLang sends for it."""
        return FLUSHED_TEXT if self.success else (self.message or FAILED_TEXT)


def flush_timeout(query: str | None) -> float:
    """The `timeout` query value; ValueError when it is not a number from 0 (FastAPI's check)."""
    value = float(query) if query is not None else 0.0
    if math.isnan(value) or value < 0:
        raise ValueError(f"timeout: Input should be greater than or equal to 0, got {query!r}")
    return value


async def flush_cache(ranks: Ranks, timeout_s: float) -> FlushResult:
    """Ask every rank to flush; rank 0's result is the answer."""
    results = await asyncio.gather(*(_flush_rank(e, timeout_s) for e in ranks.engines))
    return results[0]


async def _flush_rank(engine: Engine, timeout_s: float) -> FlushResult:
    if engine in _pending:
        return FlushResult(False, ANOTHER_PENDING)
    if timeout_s <= 0 or _idle(engine):
        return FlushResult(_flush_now(engine))
    _pending.add(engine)
    try:
        deadline = time.monotonic() + timeout_s
        while not _idle(engine):
            if time.monotonic() >= deadline:
                engine.log_line("Deferred flush_cache timed out while waiting for idle state.")
                return FlushResult(False, TIMED_OUT)
            await asyncio.sleep(TICK_S)
        return FlushResult(_flush_now(engine))
    finally:
        _pending.discard(engine)


def _idle(engine: Engine) -> bool:
    return not engine.running and not engine.queue


def _flush_now(engine: Engine) -> bool:
    """Scheduler.flush_cache: flush and reset the metrics when idle, else refuse and say why."""
    if not _idle(engine):
        engine.log_line(
            "Cache not flushed because there are pending requests. "
            f"#queue-req: {len(engine.queue)}, #running-req: {len(engine.running)}"
        )
        return False
    _steps_at_flush[engine] = engine.verify_steps_total
    _answered_at_flush[engine] = (engine.answered_decode_tokens, engine.answered_verify_steps)
    engine.log_line("Cache flushed successfully!")
    return True


def avg_spec_accept_length(engine: Engine) -> float | None:
    """What the rank's internal state says, or None when SGLang leaves the key out."""
    speculation = engine.settings.speculation
    if speculation is None:
        return None
    steps = engine.verify_steps_total - _steps_at_flush.get(engine, 0.0)
    if steps < DECODE_LOG_INTERVAL:
        return None
    tokens_then, steps_then = _answered_at_flush.get(engine, (0, 0))
    answered_steps = engine.answered_verify_steps - steps_then
    if answered_steps <= 0:  # the passes so far are those of answers still running
        return speculation.accept_length
    return (engine.answered_decode_tokens - tokens_then) / answered_steps
