"""The runner's command line and the options it produces."""

from __future__ import annotations

import argparse
import math
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.host.sglang_auth import configured_key_file
from agent.pipeline.exit_codes import (  # the runner's modules take them from here
    EXIT_FAILURE as EXIT_FAILURE,
)
from agent.pipeline.exit_codes import (
    EXIT_LOCKED as EXIT_LOCKED,
)
from agent.pipeline.exit_codes import (
    EXIT_OK as EXIT_OK,
)
from agent.pipeline.exit_codes import (
    EXIT_SIGNAL as EXIT_SIGNAL,
)
from agent.pipeline.exit_codes import (
    EXIT_USAGE as EXIT_USAGE,
)
from agent.pipeline.exit_codes import (
    EXIT_WRITE_FAILED as EXIT_WRITE_FAILED,
)
from agent.pipeline.inference.backends.base import APIS
from agent.pipeline.inference.error_marks import KINDS, parse_retry_errors
from agent.pipeline.inference.generation_flags import add_generation_flags, template_arguments
from agent.pipeline.tokenizer import add_trust_remote_code_flag


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    """Everything one run is started with."""

    servers: tuple[str, ...]
    dataset_dir: Path
    tokenizer: str | None = None
    token_budget: int | None = None
    max_samples: int | None = None
    concurrency: int = 64
    max_new_tokens: int = 4096
    temperature: float = 0.0
    top_p: float = 1.0
    on_budget: str = "finish"
    drain_timeout_s: float = 60.0
    request_timeout_s: float = 600.0
    max_retries: int = 8
    server_down_timeout_s: float = 600.0
    repair: bool = False
    drop_truncated: bool = False
    prompts_file: str = "prompts.jsonl"
    responses_file: str = "raw_responses.jsonl"
    status_interval_s: float = 1.0
    progress_interval_s: float = 10.0
    trust_remote_code: bool = False
    """Run the code a tokenizer folder ships (Kimi-K2's); never on unless asked for."""
    wait_for_server_s: float = 1200.0
    """How long to wait at start for a server that refuses connections or is warming up."""
    api_key_file: Path | None = None
    """Where the server's API key is; else SGLANG_API_KEY, never a command-line value."""
    retry_errors: tuple[str, ...] = ()
    """Kinds of permanent marks in errors.jsonl to clear before the run."""
    api: str = "sglang"
    """The backend: sglang (native /generate), openai-completions or openai-chat."""
    model: str | None = None
    """The `model` the OpenAI-compatible APIs are sent (the served one when left out)."""
    reencode: bool = False
    """openai-chat: record a text-only answer re-encoded with --tokenizer; never unless asked."""
    turns: str = "all"
    """all: every assistant turn of a conversation regenerated in order; last: the last only."""
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning: str | None = None
    """keep, disable or drop (generation_flags.py); None: the template's default."""
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    """What the chat template is rendered with: --chat-template-kwargs and --reasoning's switch."""

    @property
    def prompts_path(self) -> Path:
        """The input prompts."""
        return self.dataset_dir / self.prompts_file

    @property
    def responses_path(self) -> Path:
        """The append-only output."""
        return self.dataset_dir / self.responses_file

    @property
    def status_path(self) -> Path:
        """runner.json, rewritten atomically while running."""
        return self.dataset_dir / "runner.json"

    @property
    def errors_path(self) -> Path:
        """Prompts that failed for good."""
        return self.dataset_dir / "errors.jsonl"


def _positive_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _finite(text: str) -> float:
    """A number; float() also takes nan and inf, which no flag here can mean."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _temperature(text: str) -> float:
    """SGLang's own check (sampling_params.py): temperature must be non-negative."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _top_p(text: str) -> float:
    """SGLang's own check (sampling_params.py): top_p must be in (0, 1]."""
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _retries(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The runner's flags: more are welcome, these names are fixed (scripts rely on them)."""
    parser = argparse.ArgumentParser(
        prog="python -m agent.pipeline.inference",
        description=(
            "Generate a dataset's responses through SGLang or an OpenAI-compatible server "
            "(--api), stopping at a token budget."
        ),
    )
    add = parser.add_argument
    add(
        "--server",
        action="append",
        required=True,
        dest="servers",
        type=_server_url,
        metavar="URL",
        help=(
            "the server's base URL: SGLang, an sglang router, vLLM or a hosted API (--api); "
            "repeat to spread requests over servers"
        ),
    )
    add("--dataset-dir", type=Path, required=True)
    add("--tokenizer", help="local tokenizer path; needed for messages and prompt lines")
    add("--token-budget", type=_positive_int, help="stop at this many completion tokens")
    add("--max-samples", type=_positive_int, help="use only the first N prompts")
    add("--concurrency", type=_positive_int, default=64)
    add("--max-new-tokens", type=_positive_int, default=4096)
    add("--temperature", type=_temperature, default=0.0)
    add("--top-p", type=_top_p, default=1.0)
    add(
        "--on-budget",
        choices=("finish", "cancel"),
        default="finish",
        help="finish: let in-flight requests complete and keep them; cancel: abort them",
    )
    add("--drain-timeout", type=_positive_float, default=60.0, dest="drain_timeout_s")
    add("--request-timeout", type=_positive_float, default=600.0, dest="request_timeout_s")
    add("--max-retries", type=_retries, default=8)
    add("--server-down-timeout", type=_positive_float, default=600.0, dest="server_down_timeout_s")
    add("--repair", action="store_true", help="move corrupt lines aside instead of stopping")
    add("--drop-truncated", action="store_true", help="do not keep length-capped answers")
    add("--prompts-file", default="prompts.jsonl")
    add("--responses-file", default="raw_responses.jsonl")
    add("--progress-interval", type=_positive_float, default=10.0, dest="progress_interval_s")
    add_trust_remote_code_flag(parser)
    add_generation_flags(parser)
    _add_server_flags(parser)
    return parser  # fmt: skip


def _add_server_flags(parser: argparse.ArgumentParser) -> None:
    """Waiting for the server, its API key, and retrying prompts marked failed for good."""
    add = parser.add_argument
    add(
        "--wait-for-server",
        type=_positive_float,
        default=1200.0,
        dest="wait_for_server_s",
        metavar="SECONDS",
        help="at start, wait this long for a server still loading or warming up",
    )
    add(
        "--api-key-file",
        type=Path,
        metavar="PATH",
        help="file holding the server's API key (default: the file in $EAGLE_API_KEY_FILE, "
        "which the agent sets from the host's api_key_file, else $SGLANG_API_KEY, or "
        "$OPENAI_API_KEY under --api openai-*; never on the command line)",
    )
    add(
        "--api",
        choices=APIS,
        default="sglang",
        help="sglang: native /generate; openai-completions: /v1/completions with token ids; "
        "openai-chat: /v1/chat/completions (exact ids; text only with --reencode)",
    )
    add("--model", help="the model name the OpenAI-compatible API is sent")
    add("--reencode", action="store_true",
        help="openai-chat: a server that answers text only (a hosted API) has its answers "
        "re-encoded with --tokenizer and marked so; without it a text-only answer stops the run")  # fmt: skip
    add("--retry-errors", type=_retry_kinds, default=(), metavar="all|KIND,...",
        help=f"clear permanent marks in errors.jsonl first: all, or any of {', '.join(KINDS)}")  # fmt: skip


def _server_url(text: str) -> str:
    """An http(s) URL with a host; a typo here would otherwise be waited on for 20 minutes."""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018  (raises on a port that is not a number in range)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return text


def _retry_kinds(text: str) -> tuple[str, ...]:
    try:
        return parse_retry_errors(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_options(argv: list[str] | None) -> RunnerOptions:
    """Options from the command line; argparse exits 2 with a message on bad flags."""
    parser = build_parser()
    args = vars(parser.parse_args(argv))
    args["servers"] = tuple(url.rstrip("/") for url in args["servers"])
    args["api_key_file"] = args["api_key_file"] or configured_key_file()
    if args["reencode"] and (args["api"] != "openai-chat" or not args["tokenizer"]):
        parser.error("--reencode goes with --api openai-chat and a --tokenizer to re-encode with")
    try:
        args["template_kwargs"] = template_arguments(
            args["chat_template_kwargs"], args["reasoning"]
        )
    except ValueError as exc:
        parser.error(str(exc))
    return RunnerOptions(**args)
