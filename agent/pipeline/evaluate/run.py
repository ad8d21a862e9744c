"""The evaluation: prompts encoded as the runner encodes them, both servers at every level.

Per level and server, in bench_serving's order (server_state.py): warm-up requests on prompts
that are not measured, the cache flushed, the measured prompts, the server's own accept count.
A vLLM server (server_kind.py) is asked the same over its own API (vllm_state.py).
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.pipeline.evaluate.figures import LevelConditions, ServerFigures, figures
from agent.pipeline.evaluate.measure import Request, run_level
from agent.pipeline.evaluate.options import EvaluateError, EvaluateOptions, PromptSets
from agent.pipeline.evaluate.report import Level, level_line, report
from agent.pipeline.evaluate.server_kind import vllm_model
from agent.pipeline.evaluate.server_state import (
    DecodeReading,
    decode_accept_length,
    flush_cache,
)
from agent.pipeline.evaluate.slices import MAX_SLICES, Slice, SliceResult, length_slices
from agent.pipeline.evaluate.vllm_state import drafter_counters, level_reading, reset_prefix_cache
from agent.pipeline.inference.prompts import PromptEncoder, PromptsError, read_prompts

HEALTH_POLL_S = 1.0
NOT_AFTER_FLUSH = DecodeReading(
    unavailable="the flush before the level failed: the server's count includes earlier requests"
)


def encoded_prompts(options: EvaluateOptions) -> PromptSets:
    """The prompts' ids, exactly as the runner sends them: the measured first, then the warm-up's."""
    try:
        prompts = read_prompts(options.prompts, limit=options.num_prompts + options.warmup)
        encoder = PromptEncoder(
            options.tokenizer, prompts, trust_remote_code=options.trust_remote_code
        )
        ids = [encoder.input_ids(prompt) for prompt in prompts]
    except PromptsError as exc:
        raise EvaluateError(str(exc)) from None
    measured = ids[: options.num_prompts]
    if len(measured) < max(options.concurrency):
        raise EvaluateError(
            f"{options.prompts} gives {len(measured)} prompt(s); concurrency "
            f"{max(options.concurrency)} needs at least that many (--num-prompts, or lower "
            "--concurrency)"
        )
    domains = {name: _encoded(options, path, options.slice_prompts)
               for name, path in options.domains if path.exists()}  # fmt: skip
    missing = [f"domain {name}: no file {path} (the export holds none out of a dataset under 100 "
               "prompts)" for name, path in options.domains if not path.exists()]  # fmt: skip
    return PromptSets(measured, ids[options.num_prompts :], domains, missing)


def _encoded(options: EvaluateOptions, path: Path, limit: int) -> list[list[int]]:
    """One domain file's prompts, encoded as the runner encodes them."""
    try:
        prompts = read_prompts(path, limit=limit)
        encoder = PromptEncoder(
            options.tokenizer, prompts, trust_remote_code=options.trust_remote_code
        )
        return [encoder.input_ids(prompt) for prompt in prompts]
    except PromptsError as exc:
        raise EvaluateError(f"--domain {path}: {exc}") from None


async def evaluate(options: EvaluateOptions, prompts: PromptSets) -> dict[str, Any]:
    """Measure every level on both servers; returns what eval.json holds."""
    import aiohttp

    urls = [options.server] + ([options.baseline] if options.baseline else [])
    if len(prompts.warmup) < options.warmup:
        progress(f"evaluate: {len(prompts.warmup)} of --warmup {options.warmup} warm-up "
                 f"prompt(s): the file has no more past the {len(prompts.measured)} measured")  # fmt: skip
    assert options.request is not None
    async with aiohttp.ClientSession() as session:
        requests = {}
        for url in urls:
            await wait_until_healthy(session, url, options)
            model = await vllm_model(session, url, options.request.headers)
            requests[url] = replace(options.request, model=model)
        levels: list[Level] = []
        for concurrency in options.concurrency:
            measured = [await measure_level(session, url, prompts, concurrency, requests[url],
                                            options.flush_timeout_s)
                        for url in urls]  # fmt: skip
            _refuse_failed(urls, measured, concurrency)
            levels.append((concurrency, measured[0], measured[1] if len(measured) > 1 else None))
            progress(level_line(*levels[-1]))
        slices, left_out = planned_slices(options, prompts)
        measured_slices = [
            await measure_slice(session, urls, requests, one, prompts.warmup, options)
            for one in slices
        ]  # fmt: skip
    return report(options, prompts, levels, measured_slices, left_out)


def planned_slices(options: EvaluateOptions, prompts: PromptSets) -> tuple[list[Slice], list[str]]:
    """The domains, then the length buckets of every prompt; and the buckets left out, why."""
    least = slice_concurrency(options)
    domains = [Slice("domain", name, ids) for name, ids in prompts.domains.items()
               if len(ids) >= least]  # fmt: skip
    left = prompts.domains_missing + [
        f"domain {name}: {len(ids)} prompt(s), fewer than concurrency {least}"
        for name, ids in prompts.domains.items() if len(ids) < least
    ]  # fmt: skip
    pool = prompts.measured + [ids for found in prompts.domains.values() for ids in found]
    lengths, short = length_slices(pool, options.length_edges, options.slice_prompts, least)
    return (domains + lengths)[:MAX_SLICES], left + short


def slice_concurrency(options: EvaluateOptions) -> int:
    """The concurrency slices are measured at."""
    return options.slice_concurrency or min(options.concurrency)


async def measure_slice(
    session: Any, urls: list[str], requests: dict[str, Request], one: Slice,
    warmup: list[list[int]], options: EvaluateOptions,
) -> SliceResult:  # fmt: skip
    """One domain or length bucket, on the server and the baseline."""
    concurrency = slice_concurrency(options)
    sets = PromptSets(one.prompts, warmup)
    measured = [await measure_level(session, url, sets, concurrency, requests[url],
                                    options.flush_timeout_s)
                for url in urls]  # fmt: skip
    baseline = measured[1] if len(measured) > 1 else None
    result = SliceResult(one, concurrency, measured[0], baseline)
    line = level_line(concurrency, measured[0], baseline).removeprefix("evaluate: ")
    progress(f"evaluate: {one.kind} {one.name}: {line}")
    return result


async def measure_level(
    session: Any, url: str, prompts: PromptSets, concurrency: int, request: Request,
    flush_timeout_s: float,
) -> ServerFigures:  # fmt: skip
    """Warm up, flush, measure, and read the server's own count, for one level on one server."""
    warm = await run_level(session, url, prompts.warmup, concurrency, request)
    on_vllm = request.model is not None
    flush = (
        await reset_prefix_cache(session, url, request.headers) if on_vllm
        else await flush_cache(session, url, request.headers, flush_timeout_s)
    )  # fmt: skip
    if not flush.flushed:
        what = "its prefix cache was not reset" if on_vllm else "/flush_cache failed"
        progress(f"evaluate: {url}: {what} before concurrency {concurrency} "
                 f"({flush.error}): this level runs on a warm cache")  # fmt: skip
    before = await drafter_counters(session, url, request.headers) if on_vllm else None
    run = await run_level(session, url, prompts.measured, concurrency, request)
    if on_vllm:
        decode = level_reading(before, await drafter_counters(session, url, request.headers))
    elif flush.flushed:
        decode = await decode_accept_length(session, url, request.headers)
    else:
        decode = NOT_AFTER_FLUSH
    warm_failed = sum(answer.error is not None for answer in warm.answers)
    return figures(run, LevelConditions(flush, decode, len(warm.answers), warm_failed))


async def wait_until_healthy(session: Any, url: str, options: EvaluateOptions) -> None:
    """Wait (bounded by --wait-for-server) until /health answers 200."""
    import aiohttp

    assert options.request is not None
    deadline, why = time.monotonic() + options.wait_for_server_s, "no answer yet"
    while time.monotonic() < deadline:
        try:
            async with session.get(f"{url}/health", headers=options.request.headers,
                                   timeout=aiohttp.ClientTimeout(total=30)) as answer:  # fmt: skip
                if answer.status == 200:
                    return
                why = f"/health answered {answer.status}"
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(HEALTH_POLL_S)
    raise EvaluateError(
        f"{url} did not become ready within {options.wait_for_server_s:g} s (--wait-for-server): {why}"
    )


def _refuse_failed(urls: list[str], measured: list[ServerFigures], concurrency: int) -> None:
    for url, server in zip(urls, measured, strict=True):
        if server.failed == server.requests:
            raise EvaluateError(
                f"every request to {url} failed at concurrency {concurrency}: {server.first_error}"
            )


def progress(line: str) -> None:
    """One line on stderr, for the job's log."""
    print(line, file=sys.stderr, flush=True)  # noqa: T201
