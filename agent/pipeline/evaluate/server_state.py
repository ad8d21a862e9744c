"""Before a level, SGLang's cache flushed; after it, the accept length the server counted.

Both as sglang 0.5.23's bench_serving does them (sglang/benchmark/serving.py): it warms up, then
`POST /flush_cache?timeout=S` (~1011-1032, ~1515-1523; the server waits up to S seconds for its
requests to finish, srt/managers/scheduler_components/flush_wrapper.py ~22-60, and answers 200,
or 400 with a reason, srt/entrypoints/http_server.py ~1025-1041), measures, then reads
`internal_states[0].avg_spec_accept_length` from `/server_info` (~1641-1660; the decode server's
under PD disaggregation). That figure is cumulative since the flush (srt/managers/
scheduler_components/internal_state.py ~243-253), so it belongs to the level only when the flush
worked. sglang-router 0.3.2 answers `/get_server_info` only, so a 404 is asked again there.
Every answer is read with a size and time bound and checked: a wrong one is a missing figure with
its reason, never an exception.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

from agent.host.bounded_http import bounded_body, bounded_text, strict_json
from agent.pipeline.evaluate.spec_meta import MAX_ACCEPT_LENGTH

FLUSH_GRACE_S = 30.0
"""How much longer than its own `timeout` the flush may take to answer."""
SERVER_INFO_TIMEOUT_S = 30.0
MAX_SERVER_INFO_BYTES = 4 << 20
"""/server_info is the server's args and per-rank state: tens of KiB."""
MAX_REASON_CHARS = 300


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    """Whether the cache was flushed, and if not, why."""

    flushed: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DecodeReading:
    """The server's decode-pass accept length after a level, or why there is none."""

    accept_length: float | None = None
    unavailable: str | None = None
    ranks: int = 1
    """The schedulers (DP ranks) it is the mean of: SGLang gives each rank's average only."""
    acceptance: float | None = None
    """vLLM: accepted draft tokens / draft tokens over the level, from its counters."""
    per_position: tuple[float, ...] = ()
    """vLLM: per draft position, the share of drafts accepted there, over the level."""
    from_counters: bool = False
    """vLLM: the figures are its counters' change over the level, not SGLang's /server_info."""


async def flush_cache(
    session: Any, url: str, headers: dict[str, str], timeout_s: float
) -> FlushOutcome:
    """Flush the server's cache, letting it wait up to `timeout_s` for its requests to finish."""
    import aiohttp

    try:
        async with session.post(
            f"{url}/flush_cache", params={"timeout": f"{timeout_s:g}"}, headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout_s + FLUSH_GRACE_S),
        ) as response:  # fmt: skip
            if response.status == 200:
                return FlushOutcome(True)
            text = await bounded_text(response, MAX_REASON_CHARS)
            return FlushOutcome(False, _reason(f"HTTP {response.status}: {text}"))
    except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
        return FlushOutcome(False, _reason(f"{type(exc).__name__}: {exc}"))


async def decode_accept_length(session: Any, url: str, headers: dict[str, str]) -> DecodeReading:
    """`avg_spec_accept_length` of every DP rank (bench_serving reads rank 0's alone)."""
    import aiohttp

    try:
        info = await _server_info(session, url, headers)
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, RecursionError) as exc:
        return DecodeReading(unavailable=_reason(f"/server_info: {type(exc).__name__}: {exc}"))
    return reading_of(info)


async def _server_info(session: Any, url: str, headers: dict[str, str]) -> Any:
    status, info = await _get_json(session, f"{url}/server_info", headers)
    if status == 404:
        status, info = await _get_json(session, f"{url}/get_server_info", headers)
    if status != 200:
        raise ValueError(f"HTTP {status}")
    return info


async def _get_json(session: Any, url: str, headers: dict[str, str]) -> tuple[int, Any]:
    """The status, and the body as JSON when it is 200 (else None, the body left unread)."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=SERVER_INFO_TIMEOUT_S)
    async with session.get(url, headers=headers, timeout=timeout) as answer:
        if answer.status != 200:
            return answer.status, None
        return 200, strict_json(await bounded_body(answer, MAX_SERVER_INFO_BYTES))


def reading_of(info: Any) -> DecodeReading:
    """The figure in a /server_info body, checked against what SGLang sends."""
    if isinstance(info, dict) and isinstance(info.get("decode"), list) and info["decode"]:
        info = info["decode"][0]  # PD disaggregation: the decode server's (serving.py ~1648)
    states = info.get("internal_states") if isinstance(info, dict) else None
    if not isinstance(states, list) or not states or not all(isinstance(x, dict) for x in states):
        return DecodeReading(unavailable="/server_info has no internal_states")
    readings = [_rank_reading(state) for state in states]
    if len(readings) == 1 or all(r.accept_length is None for r in readings):
        return readings[0]
    missing = [rank for rank, r in enumerate(readings) if r.accept_length is None]
    if missing:
        return DecodeReading(unavailable=(
            f"DP rank(s) {', '.join(map(str, missing[:8]))} of {len(readings)} reported none: "
            "a figure from the others would leave their requests out"
        ))  # fmt: skip
    values = [r.accept_length for r in readings if r.accept_length is not None]
    return DecodeReading(sum(values) / len(values), ranks=len(values))


def _rank_reading(state: dict[str, Any]) -> DecodeReading:
    """One DP rank's (one scheduler's) figure."""
    value = state.get("avg_spec_accept_length")
    if value is None:
        return DecodeReading(
            unavailable="the server reported none (no drafter, or under 40 decode batches)"
        )
    if type(value) not in (int, float) or not math.isfinite(value):
        return DecodeReading(unavailable=_reason(f"avg_spec_accept_length is {repr(value)[:80]}"))
    if not 0 < value <= MAX_ACCEPT_LENGTH:
        return DecodeReading(unavailable=f"avg_spec_accept_length {value:g} is out of range")
    return DecodeReading(float(value))


def _reason(text: str) -> str:
    """One line, cut short: it is a peer's text."""
    return " ".join(text.split())[:MAX_REASON_CHARS]
