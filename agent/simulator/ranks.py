"""Data parallelism: one simulated scheduler per DP rank, fed round-robin, as `--dp-size N` runs.

The flags describe the whole server, so each rank gets an even share of the decode rate, the KV
cache and `--max-running-requests` (SGLang divides the latter by the DP size,
srt/mem_cache/kv_cache_configurator.py:3284). Requests go to ranks in turn, SGLang's round-robin
dispatch (srt/managers/data_parallel_controller.py:880).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from functools import partial

from agent.simulator.engine import Engine, EngineSettings, SimRequest
from agent.simulator.sglang_log import SglangLog


class Ranks:
    """The DP ranks of one simulated server."""

    def __init__(self, settings: EngineSettings, dp_size: int, log: SglangLog) -> None:
        self.dp_size = dp_size
        self.settings = settings
        share = replace(
            settings,
            decode_tokens_per_s=settings.decode_tokens_per_s / dp_size,
            max_running_requests=max(1, settings.max_running_requests // dp_size),
            max_total_tokens=max(1, settings.max_total_tokens // dp_size),
        )
        self.engines = [
            Engine(share, partial(log.line, tag=f" DP{rank}" if dp_size > 1 else ""))
            for rank in range(dp_size)
        ]
        self._turn = itertools.cycle(enumerate(self.engines))

    @property
    def busy(self) -> bool:
        """Whether any request runs or waits on any rank."""
        return any(engine.running or engine.queue for engine in self.engines)

    def submit(self, request: SimRequest) -> None:
        """Hand a request to the next rank in turn, noting which on the request."""
        request.rank, engine = next(self._turn)
        engine.submit(request)

    def cancel(self, request: SimRequest) -> None:
        """Forget a request whose client went away, wherever it is."""
        for engine in self.engines:
            engine.cancel(request)

    def abort(self, rid: str | None) -> int:
        """Abort by rid (or all); returns how many were aborted."""
        return sum(engine.abort(rid) for engine in self.engines)

    async def run(self) -> None:
        """Run every rank's scheduler loop."""
        await asyncio.gather(*(engine.run() for engine in self.engines))
