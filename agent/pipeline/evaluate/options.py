"""What an evaluation is asked to do: the checked command line, and the prompts it sends."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.pipeline.evaluate.measure import Request

FLUSH_TIMEOUT_S = 60.0
"""How long /flush_cache may wait for the server's requests to finish: bench_serving's default
(sglang/benchmark/serving.py ~1011)."""


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


@dataclass(frozen=True, slots=True)
class PromptSets:
    """The measured prompts' ids, and the warm-up's: other prompts of the same file."""

    measured: list[list[int]]
    warmup: list[list[int]] = field(default_factory=list)
