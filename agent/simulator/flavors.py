"""Which server the simulator pretends to be: SGLang (native), vLLM, or a text-only hosted API.

The flavour decides the routes and the answers' shape: `sglang` serves the native /generate API
and, beside it, SGLang's own /v1 (ids per SGLang's rules, its flat errors, `reasoning_content`:
openai-compat-wire.md §3); `vllm` answers /v1/completions and /v1/chat/completions with token ids
(openai-compat-wire.md §1-2); `hosted` answers them with text only, rate-limits with 429 and
`Retry-After`, reports `usage.cost` and can fail inside a stream, as OpenRouter documents (§4).
Each follows its server's version of record (vLLM 0.34.0, SGLang 0.5.23), with the source lines
in the modules that answer; tests/simulator holds a test per behaviour the runner relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Flavor = Literal["sglang", "vllm", "hosted"]
FLAVORS: tuple[Flavor, ...] = ("sglang", "vllm", "hosted")


@dataclass(frozen=True, slots=True)
class FlavorSettings:
    """The flavour and the behaviour only the OpenAI-compatible flavours have."""

    flavor: Flavor = "sglang"
    reasoning: bool = False
    """Answer chat with a reasoning part (as a server started with --reasoning-parser)."""
    rate_limit_rate: float = 0.0
    """hosted: share of requests answered 429 with Retry-After."""
    retry_after_s: float = 1.0
    """hosted: the Retry-After a 429 carries, in (wall) seconds."""
    stream_error_rate: float = 0.0
    """hosted: share of streams that fail after their first event (HTTP 200 already sent)."""
    usd_per_prompt_token: float = 0.5e-6
    usd_per_completion_token: float = 2e-6
    vllm_dev_mode: bool = False
    """vllm: answer /server_info with vLLM's own keys, as VLLM_SERVER_DEV_MODE=1 does."""

    def __post_init__(self) -> None:
        """A flag another flavour would silently ignore is refused."""
        if self.flavor != "hosted" and (self.rate_limit_rate or self.stream_error_rate):
            raise ValueError(
                "--rate-limit-rate and --stream-error-rate are a hosted API's faults: "
                "use them with --flavor hosted"
            )
        if self.vllm_dev_mode and self.flavor != "vllm":
            raise ValueError("--vllm-dev-mode is vLLM's: use it with --flavor vllm")

    @property
    def native(self) -> bool:
        """Whether SGLang's native routes (/generate, /server_info, ...) are served."""
        return self.flavor == "sglang"

    @property
    def with_ids(self) -> bool:
        """Whether answers carry token ids when asked (vLLM and SGLang do; a hosted API never)."""
        return self.flavor != "hosted"

    @property
    def reasoning_fields(self) -> tuple[str, ...]:
        """Where chat reasoning goes, by server.

        vLLM 0.33 `reasoning`; SGLang `reasoning_content` (protocol.py:1018,1296,1357);
        OpenRouter `reasoning` and `reasoning_details`.
        """
        if not self.reasoning:
            return ()
        by_flavor: dict[Flavor, tuple[str, ...]] = {
            "vllm": ("reasoning",),
            "sglang": ("reasoning_content",),
            "hosted": ("reasoning", "reasoning_details"),
        }
        return by_flavor[self.flavor]

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What a hosted API bills for one answer (usage.cost, in credits = USD)."""
        return round(
            prompt_tokens * self.usd_per_prompt_token
            + completion_tokens * self.usd_per_completion_token,
            9,
        )
