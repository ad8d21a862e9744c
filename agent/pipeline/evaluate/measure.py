"""One concurrency level against one server: every prompt sent, at most N at once, timed.

Requests go to SGLang's native `/generate` with the prompt's token ids, as the runner sends them,
or to vLLM's `/v1/completions` with the same ids (openai_answers.py). Streamed answers (SSE)
give the time to the first token. `ignore_eos` is a sampling parameter of both (SGLang's
srt/sampling/sampling_params.py ~173): every answer runs to max_new_tokens, as bench_serving
sends it by default (benchmark/serving.py ~289-317).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any

from agent.datasets.response_lines import MAX_RESPONSE_TOKENS
from agent.host.bounded_http import bounded_body, bounded_text, strict_json
from agent.pipeline.evaluate.openai_answers import (
    completion_body,
    completion_tokens,
    has_first_token,
)
from agent.pipeline.evaluate.spec_meta import SpecMeta, spec_meta

MAX_ERROR_CHARS = 300
MAX_ANSWER_BYTES = 16 << 20
"""An answer or a stream is read this far; past it, the request is an error."""
MAX_TOKENS = MAX_RESPONSE_TOKENS
"""The most completion tokens one response may count, as the response line defines it."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One request's outcome."""

    latency_s: float
    completion_tokens: int = 0
    spec: SpecMeta | None = None
    """meta_info's speculative fields, when the server runs a drafter."""
    ttft_s: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """What every request of an evaluation shares."""

    max_new_tokens: int
    temperature: float
    stream: bool
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0
    ignore_eos: bool = False
    model: str | None = None
    """vLLM's served model name: requests go to /v1/completions. None: SGLang's /generate."""

    @property
    def path(self) -> str:
        """Where one prompt is sent."""
        return "/generate" if self.model is None else "/v1/completions"

    def body(self, input_ids: list[int]) -> dict[str, Any]:
        """The request body for one prompt."""
        if self.model is not None:
            return completion_body(self.model, input_ids, self.max_new_tokens, self.temperature,
                                   self.stream, self.ignore_eos)  # fmt: skip
        sampling: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens, "temperature": self.temperature,
        }  # fmt: skip
        if self.ignore_eos:
            sampling["ignore_eos"] = True
        return {"input_ids": input_ids, "sampling_params": sampling, "stream": self.stream}


@dataclass(frozen=True, slots=True)
class LevelRun:
    """Every answer of one level, and how long the level took from first send to last answer."""

    answers: tuple[Answer, ...]
    wall_s: float


async def run_level(
    session: Any, url: str, prompts: list[list[int]], concurrency: int, request: Request
) -> LevelRun:
    """Send every prompt, `concurrency` at a time; returns when all have answered."""
    slots = asyncio.Semaphore(concurrency)

    async def one(ids: list[int]) -> Answer:
        async with slots:
            return await send(session, url, ids, request)

    started = time.perf_counter()
    tasks = [asyncio.create_task(one(ids)) for ids in prompts]
    answers = await asyncio.gather(*tasks)
    return LevelRun(tuple(answers), time.perf_counter() - started)


async def send(session: Any, url: str, ids: list[int], request: Request) -> Answer:
    """One request, timed; an error is an Answer with its reason, never an exception."""
    import aiohttp

    started = time.perf_counter()
    try:
        async with session.post(
            f"{url}{request.path}", json=request.body(ids), headers=request.headers,
            timeout=aiohttp.ClientTimeout(total=request.timeout_s),
        ) as response:  # fmt: skip
            if response.status != 200:
                text = (await bounded_text(response))[:MAX_ERROR_CHARS]
                return Answer(
                    time.perf_counter() - started, error=f"HTTP {response.status}: {text}"
                )
            if request.stream:
                streamed = await _streamed(response, started, openai=request.model is not None)
                return within_limit(streamed, request.max_new_tokens)
            body = strict_json(await bounded_body(response, MAX_ANSWER_BYTES))
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, RecursionError) as exc:
        return Answer(
            time.perf_counter() - started, error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
        )
    elapsed = time.perf_counter() - started
    if request.model is not None:
        return within_limit(_openai_answer(body, elapsed, None), request.max_new_tokens)
    return within_limit(_answer(body, elapsed, None, whole=True), request.max_new_tokens)


def within_limit(answer: Answer, max_new_tokens: int) -> Answer:
    """An answer longer than the max_new_tokens asked for is an error, never a figure.

    A drafter server that ignored the limit (1,024 tokens for 16) once made a 63× speedup and a
    verdict: its tokens per second are not those of the requests the baseline answered.
    """
    if answer.error is None and answer.completion_tokens > max_new_tokens:
        return replace(answer, error=(
            f"{answer.completion_tokens:,} tokens for max_new_tokens {max_new_tokens:,}: the "
            "server ignores the limit, so its speed cannot be compared"
        ))  # fmt: skip
    return answer


async def _streamed(response: Any, started: float, *, openai: bool = False) -> Answer:
    first: float | None = None
    last: dict[str, Any] = {}
    received = 0
    async for raw in response.content:
        received += len(raw)
        if received > MAX_ANSWER_BYTES:
            return Answer(time.perf_counter() - started, error="the stream passed its size bound")
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = strict_json(line[5:])
        if not isinstance(chunk, dict):  # a list, a number: no event SGLang sends
            return Answer(
                time.perf_counter() - started,
                error=f"a stream event is JSON {type(chunk).__name__}, not an object",
            )
        if "error" in chunk:
            return Answer(
                time.perf_counter() - started, error=str(chunk["error"])[:MAX_ERROR_CHARS]
            )
        if first is None and (has_first_token(chunk) if openai else chunk.get("output_ids")):
            first = time.perf_counter() - started
        last = chunk
    if openai:
        return _openai_answer(last, time.perf_counter() - started, first)
    return _answer(last, time.perf_counter() - started, first)


def _openai_answer(body: Any, latency_s: float, ttft_s: float | None) -> Answer:
    """A vLLM answer's count (no per-request speculative fields: its counters have them)."""
    tokens = completion_tokens(body)
    if isinstance(tokens, str):
        return Answer(latency_s, error=tokens)
    return Answer(latency_s, tokens, None, ttft_s)


def _answer(body: Any, latency_s: float, ttft_s: float | None, *, whole: bool = False) -> Answer:
    """The figures of an answer; `whole` when its output_ids are all of them (not a stream's)."""
    meta = body.get("meta_info") if isinstance(body, dict) else None
    if not isinstance(meta, dict):
        return Answer(latency_s, error="the answer has no meta_info")
    tokens, ids = meta.get("completion_tokens"), body.get("output_ids")
    if type(tokens) is not int:
        tokens = len(ids) if isinstance(ids, list) else 0
    if tokens < 0 or tokens > MAX_TOKENS:
        return Answer(latency_s, error=f"completion_tokens is {tokens:,}, not a count")
    if whole and isinstance(ids, list) and tokens != len(ids):
        return Answer(latency_s, error=f"completion_tokens {tokens:,} for {len(ids):,} output ids")
    return Answer(latency_s, tokens, spec_meta(meta), ttft_s)
