"""The evaluation: prompts encoded as the runner encodes them, both servers at every level."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pipeline.evaluate.figures import ServerFigures, figures, is_slower, verdict
from agent.pipeline.evaluate.measure import Request, run_level, send
from agent.pipeline.inference.prompts import PromptEncoder, PromptsError, read_prompts

HEALTH_POLL_S = 1.0
EVAL_FILE = "eval.json"


class EvaluateError(Exception):
    """The evaluation cannot be done; the message says why."""


@dataclass(frozen=True, slots=True)
class EvaluateOptions:
    """The command line, checked."""

    server: str
    prompts: Path
    out: Path
    baseline: str | None = None
    num_prompts: int = 64
    concurrency: tuple[int, ...] = (1, 8, 32)
    max_new_tokens: int = 256
    temperature: float = 0.0
    stream: bool = False
    tokenizer: str | None = None
    trust_remote_code: bool = False
    warmup: int = 2
    wait_for_server_s: float = 600.0
    request: Request | None = None


def encoded_prompts(options: EvaluateOptions) -> list[list[int]]:
    """The prompts' ids, exactly as the runner sends them."""
    try:
        prompts = read_prompts(options.prompts, limit=options.num_prompts)
        encoder = PromptEncoder(
            options.tokenizer, prompts, trust_remote_code=options.trust_remote_code
        )
        ids = [encoder.input_ids(prompt) for prompt in prompts]
    except PromptsError as exc:
        raise EvaluateError(str(exc)) from None
    if len(ids) < max(options.concurrency):
        raise EvaluateError(
            f"{options.prompts} gives {len(ids)} prompt(s); concurrency {max(options.concurrency)} "
            "needs at least that many (--num-prompts, or lower --concurrency)"
        )
    return ids


async def evaluate(options: EvaluateOptions, prompts: list[list[int]]) -> dict[str, Any]:
    """Measure every level on both servers; returns what eval.json holds."""
    import aiohttp

    assert options.request is not None
    urls = [options.server] + ([options.baseline] if options.baseline else [])
    async with aiohttp.ClientSession() as session:
        for url in urls:
            await wait_until_healthy(session, url, options)
            for ids in prompts[: options.warmup]:
                await send(session, url, ids, options.request)
        levels = []
        for concurrency in options.concurrency:
            measured = [figures(await run_level(session, url, prompts, concurrency, options.request))
                        for url in urls]  # fmt: skip
            _refuse_failed(urls, measured, concurrency)
            levels.append((concurrency, measured[0], measured[1] if len(measured) > 1 else None))
            progress(_level_line(*levels[-1]))
    return report(options, levels)


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


def report(
    options: EvaluateOptions, levels: list[tuple[int, ServerFigures, ServerFigures | None]]
) -> dict[str, Any]:
    """eval.json: the levels in the fixed shape, the verdict, and the details beside them."""
    rows, details, summary = [], [], []
    for concurrency, drafter, baseline in levels:
        speedup = (  # rounded once, so the verdict's words and the level's figure agree
            round(drafter.tokens_per_s / baseline.tokens_per_s, 3)
            if baseline and baseline.tokens_per_s
            else None
        )
        rows.append({
            "concurrency": concurrency,
            "tokens_per_s": round(drafter.tokens_per_s, 2),
            "baseline_tokens_per_s": round(baseline.tokens_per_s, 2) if baseline else None,
            "speedup": speedup,
            "accept_length": round(drafter.accept_length, 3) if drafter.accept_length else None,
            "latency_p50_s": round(drafter.latency_p50_s, 4),
            "latency_p95_s": round(drafter.latency_p95_s, 4),
        })  # fmt: skip
        details.append({"concurrency": concurrency, "server": dataclasses.asdict(drafter),
                        "baseline": dataclasses.asdict(baseline) if baseline else None})  # fmt: skip
        summary.append((concurrency, speedup, drafter.accept_length))
    return {
        "levels": rows,
        "verdict": verdict(summary),
        "slower": is_slower(summary),
        "finished_at": time.time(),
        "settings": {
            "server": options.server, "baseline": options.baseline, "prompts": str(options.prompts),
            "num_prompts": options.num_prompts, "max_new_tokens": options.max_new_tokens,
            "temperature": options.temperature, "stream": options.stream,
        },
        "details": details,
    }  # fmt: skip


def write_report(out: Path, record: dict[str, Any]) -> Path:
    """OUT/eval.json, replaced whole."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / EVAL_FILE
    partial = path.with_name(EVAL_FILE + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(path)
    return path


def _level_line(concurrency: int, drafter: ServerFigures, baseline: ServerFigures | None) -> str:
    accept = f", accept length {drafter.accept_length:.2f}" if drafter.accept_length else ""
    line = f"evaluate: concurrency {concurrency}: {drafter.tokens_per_s:,.1f} tokens/s{accept}"
    if baseline is not None and baseline.tokens_per_s:
        line += (f"; baseline {baseline.tokens_per_s:,.1f} tokens/s: "
                 f"{drafter.tokens_per_s / baseline.tokens_per_s:.2f}×")  # fmt: skip
    failed = drafter.failed + (baseline.failed if baseline else 0)
    return line + (f"; {failed} request(s) failed" if failed else "")


def progress(line: str) -> None:
    """One line on stderr, for the job's log."""
    print(line, file=sys.stderr, flush=True)  # noqa: T201
