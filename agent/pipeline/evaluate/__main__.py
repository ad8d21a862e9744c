"""`python -m agent.pipeline.evaluate --server URL [--baseline URL] --prompts FILE --out DIR ...`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from agent.host.sglang_auth import (
    ApiKeyError,
    bearer_headers,
    configured_key_file,
    read_api_key,
)
from agent.pipeline.evaluate.measure import Request
from agent.pipeline.evaluate.options import (
    FLUSH_TIMEOUT_S,
    LENGTH_EDGES,
    EvaluateError,
    EvaluateOptions,
)
from agent.pipeline.evaluate.report import write_report
from agent.pipeline.evaluate.run import encoded_prompts, evaluate, progress
from agent.pipeline.exit_codes import exit_with
from agent.pipeline.tokenizer import add_trust_remote_code_flag

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The command line scripts rely on (its names are fixed), and the evaluation's own options."""
    parser = argparse.ArgumentParser(
        prog="python -m agent.pipeline.evaluate",
        description="Tokens/s, latency, accept length and speedup of a drafter, per concurrency.",
    )
    add = parser.add_argument
    add("--server", required=True, help="the SGLang server running the drafter")
    add("--baseline", help="the same model without the drafter (for the speedup)")
    add("--prompts", type=Path, required=True, help="held-out prompts, any of the three shapes")
    add("--num-prompts", type=_positive, default=64, help="prompts per level (default 64)")
    add("--concurrency", type=_levels, default=(1, 8, 32), help="levels, e.g. 1,8,32 (default)")
    add("--max-new-tokens", type=_positive, default=256)
    add("--temperature", type=float, default=0.0, help="fixed sampling; 0 (default) is greedy")
    add("--stream", action="store_true", help="stream answers, to measure time to first token")
    add("--tokenizer", help="needed for prompts with messages or text (not for input_ids)")
    add_trust_remote_code_flag(parser)
    add("--out", type=Path, required=True, help="OUT/eval.json is written here")
    add("--warmup", type=_count, default=2,
        help="requests per level and server on prompts past the measured ones, before the "
             "cache is flushed (default 2)")  # fmt: skip
    add("--ignore-eos", action="store_true",
        help="every answer runs to --max-new-tokens (SGLang's ignore_eos, as bench_serving)")  # fmt: skip
    add("--flush-timeout", type=float, default=FLUSH_TIMEOUT_S,
        help="seconds /flush_cache may wait for the server's requests (default 60)")  # fmt: skip
    add("--domain", action="append", type=_domain, default=[], metavar="NAME=FILE",
        help="a domain's prompts, measured on their own (repeat it: one per dataset)")  # fmt: skip
    add("--length-buckets", type=_edges, default=LENGTH_EDGES, metavar="N,N,...",
        help="prompt-length edges in tokens, each bucket measured on its own (default "
             "512,2048,8192; 'none' for no buckets)")  # fmt: skip
    add("--slice-prompts", type=_positive, default=16,
        help="the most prompts per domain or length bucket (default 16)")  # fmt: skip
    add("--slice-concurrency", type=_positive,
        help="the concurrency domains and buckets are measured at (default: the lowest level)")  # fmt: skip
    add("--wait-for-server", type=float, default=600.0, help="seconds to wait for /health")
    add("--request-timeout", type=float, default=600.0, help="seconds per request")
    add("--api-key-file", help="the servers' --api-key (else the file in $EAGLE_API_KEY_FILE, "
        "which the agent sets from the host's api_key_file, else $SGLANG_API_KEY)")  # fmt: skip
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0")
    return value


def _domain(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=FILE (say math=held_out/math.jsonl)"
        )
    return name.strip()[:80], Path(path)


def _edges(text: str) -> tuple[int, ...]:
    if text.strip().lower() in ("none", "0", ""):
        return ()
    return tuple(sorted({_positive(part.strip()) for part in text.split(",") if part.strip()}))


def _levels(text: str) -> tuple[int, ...]:
    levels = tuple(_positive(part.strip()) for part in text.split(",") if part.strip())
    if not levels:
        raise argparse.ArgumentTypeError("give at least one level, e.g. 1,8,32")
    return tuple(sorted(set(levels)))


def options_from(args: argparse.Namespace) -> EvaluateOptions:
    """The options the flags describe."""
    if not 0.0 <= args.temperature <= 2.0:
        raise EvaluateError(f"--temperature {args.temperature:g} must be between 0 and 2")
    if not 0.0 <= args.flush_timeout <= 3600.0:
        raise EvaluateError(f"--flush-timeout {args.flush_timeout:g} must be between 0 and 3600")
    for flag, url in (("--server", args.server), ("--baseline", args.baseline)):
        if url is not None and not url.startswith(("http://", "https://")):
            raise EvaluateError(f"{flag} {url!r} is not an http(s) URL")
    headers = bearer_headers(read_api_key(args.api_key_file or configured_key_file()))
    request = Request(
        args.max_new_tokens, args.temperature, args.stream, headers, args.request_timeout,
        ignore_eos=args.ignore_eos,
    )  # fmt: skip
    return EvaluateOptions(
        server=args.server.rstrip("/"), baseline=args.baseline.rstrip("/") if args.baseline else None,
        prompts=args.prompts, out=args.out, num_prompts=args.num_prompts,
        concurrency=args.concurrency, max_new_tokens=args.max_new_tokens,
        temperature=args.temperature, stream=args.stream, tokenizer=args.tokenizer,
        trust_remote_code=args.trust_remote_code, warmup=args.warmup,
        wait_for_server_s=args.wait_for_server, flush_timeout_s=args.flush_timeout,
        request=request, domains=_unique(args.domain), length_edges=args.length_buckets,
        slice_prompts=args.slice_prompts, slice_concurrency=args.slice_concurrency,
    )  # fmt: skip


def _unique(domains: list[tuple[str, Path]]) -> tuple[tuple[str, Path], ...]:
    names = [name for name, _ in domains]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise EvaluateError(f"--domain {', '.join(twice)} given twice: one file per domain")
    return tuple(domains)


def main(argv: list[str] | None = None) -> int:
    """Evaluate; 0 when measured (whatever the verdict), 1 on failure, 2 on usage."""
    args = build_parser().parse_args(argv)
    try:
        options = options_from(args)
        prompts = encoded_prompts(options)
    except (EvaluateError, ApiKeyError) as exc:
        print(f"evaluate: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    try:
        record = asyncio.run(evaluate(options, prompts))
        path = write_report(options.out, record)
    except (EvaluateError, OSError) as exc:
        print(f"evaluate: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_FAILURE
    progress(f"evaluate: {record['verdict']}; wrote {path}")
    return EXIT_OK


if __name__ == "__main__":
    exit_with(main, "evaluate")
