"""Before a level on vLLM, its prefix cache reset where it allows it; after, its drafter's counters.

vLLM has no /flush_cache. Its `POST /reset_prefix_cache` exists only with VLLM_SERVER_DEV_MODE=1
(vllm 0.32 entrypoints/serve/dev/cache/api_router.py; routers.py ~40): elsewhere it is a 404, and
a level may then reuse the prefix cache of the levels before it (the measured prompts repeat),
which the report says as it says a failed flush. The accept length is the change of vLLM's
speculative counters over the level (agent/probes/vllm_spec.py: every engine summed, derived as
vLLM logs them), read from /metrics before and after it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.host.bounded_http import bounded_body, bounded_text, strict_json
from agent.pipeline.evaluate.server_state import MAX_REASON_CHARS, DecodeReading, FlushOutcome
from agent.probes import prometheus
from agent.probes.vllm_spec import SpecCounters, figures_of, spec_counters

METRICS_TIMEOUT_S = 30.0
MAX_METRICS_BYTES = 4 << 20
RESET_TRIES, RESET_RETRY_S = 3, 1.0
HELD = "vLLM did not reset its prefix cache (blocks still held): this level may reuse it"
NOT_IN_DEV_MODE = (
    "vLLM resets its prefix cache only in dev mode (VLLM_SERVER_DEV_MODE=1): this level may "
    "reuse the cache of the levels before it"
)


async def reset_prefix_cache(session: Any, url: str, headers: dict[str, str]) -> FlushOutcome:
    """VLLM's nearest thing to SGLang's flush, where the server offers it.

    It answers 200 with `{"success": false}` while blocks are held (running requests, KV
    offload in flight): asked again a few times, a second apart, as its docstring suggests.
    """
    outcome = FlushOutcome(False, "not asked")
    for attempt in range(RESET_TRIES):
        if attempt:
            await asyncio.sleep(RESET_RETRY_S)
        outcome = await _reset_once(session, url, headers)
        if outcome.flushed or outcome.error != HELD:
            return outcome
    return outcome


async def _reset_once(session: Any, url: str, headers: dict[str, str]) -> FlushOutcome:
    import aiohttp

    try:
        async with session.post(f"{url}/reset_prefix_cache", headers=headers,
                                timeout=aiohttp.ClientTimeout(total=METRICS_TIMEOUT_S)) as answer:  # fmt: skip
            if answer.status in (404, 405):
                return FlushOutcome(False, NOT_IN_DEV_MODE)
            text = await bounded_text(answer, MAX_REASON_CHARS)
            if answer.status != 200:
                return FlushOutcome(False, f"/reset_prefix_cache: HTTP {answer.status}: "
                                           + " ".join(text.split()))  # fmt: skip
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        return FlushOutcome(False, f"/reset_prefix_cache: {type(exc).__name__}: {exc}"[:300])
    try:
        said = strict_json(text)
    except (ValueError, RecursionError):
        said = None
    if isinstance(said, dict) and said.get("success") is True:
        return FlushOutcome(True)
    return FlushOutcome(False, HELD)


async def drafter_counters(
    session: Any, url: str, headers: dict[str, str]
) -> SpecCounters | str | None:
    """The speculative counters now; None with no drafter; a reason when /metrics failed."""
    import aiohttp

    try:
        async with session.get(f"{url}/metrics", headers=headers,
                               timeout=aiohttp.ClientTimeout(total=METRICS_TIMEOUT_S)) as answer:  # fmt: skip
            if answer.status != 200:
                return f"/metrics: HTTP {answer.status}"
            text = (await bounded_body(answer, MAX_METRICS_BYTES)).decode(errors="replace")
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:  # past its size bound
        return f"/metrics: {type(exc).__name__}: {exc}"[:300]
    return spec_counters(prometheus.parse(text, "vllm"))


def level_reading(
    before: SpecCounters | str | None, after: SpecCounters | str | None
) -> DecodeReading:
    """What the counters say of the level between two readings."""
    if isinstance(before, str) or isinstance(after, str):
        return DecodeReading(unavailable=before if isinstance(before, str) else str(after))
    if before is None or after is None:
        return DecodeReading(unavailable="vLLM counts no drafts: no drafter on this server")
    if after.drafts < before.drafts:
        return DecodeReading(unavailable="vLLM's counters went back: the server restarted")
    figures = figures_of(after.minus(before))
    if figures.accept_length is None:
        return DecodeReading(unavailable="no draft was made during the level")
    return DecodeReading(figures.accept_length, acceptance=figures.acceptance,
                         per_position=figures.per_position, from_counters=True)  # fmt: skip
