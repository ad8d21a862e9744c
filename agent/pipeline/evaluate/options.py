"""What an evaluation is asked to do: the checked command line, and the prompts it sends."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.pipeline.evaluate.measure import Request

FLUSH_TIMEOUT_S = 60.0
"""How long /flush_cache may wait for the server's requests to finish: bench_serving's default
(sglang/benchmark/serving.py ~1011)."""


LENGTH_EDGES = (512, 2048, 8192)
"""Where speculators PR #684 saw the accept length fall: 2.30 at 2k tokens, 1.09 at 16k."""


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
    """Unmeasured requests per level and server, before the flush."""
    wait_for_server_s: float = 600.0
    flush_timeout_s: float = FLUSH_TIMEOUT_S
    request: Request | None = None
    domains: tuple[tuple[str, Path], ...] = ()
    """Prompt files measured one by one (`--domain NAME=FILE`): the drafter per domain."""
    length_edges: tuple[int, ...] = LENGTH_EDGES
    """Prompt-length bucket edges in tokens: the drafter per prompt length."""
    slice_prompts: int = 16
    """The most prompts one domain or length bucket is measured on."""
    slice_concurrency: int | None = None
    """The concurrency slices are measured at; None: the lowest level."""


@dataclass(frozen=True, slots=True)
class PromptSets:
    """The measured prompts' ids, and the warm-up's: other prompts of the same file."""

    measured: list[list[int]]
    warmup: list[list[int]] = field(default_factory=list)
    domains: dict[str, list[list[int]]] = field(default_factory=dict)
    """Each `--domain` file's prompts, at most `slice_prompts` of them."""
    domains_missing: list[str] = field(default_factory=list)
    """The `--domain` files that do not exist, said (a dataset the export held none out of)."""
