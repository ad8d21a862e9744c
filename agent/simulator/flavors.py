"""Which server the simulator pretends to be: SGLang (native), vLLM, or a text-only hosted API.

The flavour decides the routes and the answers' shape: `sglang` serves the native /generate API
and, beside it, SGLang's own /v1 (ids per SGLang's rules, its flat errors, `reasoning_content`:
openai-compat-wire.md §3); `vllm` answers /v1/completions and /v1/chat/completions with token ids
(openai-compat-wire.md §1-2); `hosted` answers them with text only, rate-limits with 429 and
`Retry-After`, reports `usage.cost` and can fail inside a stream, as OpenRouter documents (§4).
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

    def __post_init__(self) -> None:
        """A hosted API's faults on a vLLM or SGLang stand-in would be silently ignored: refused."""
        if self.flavor != "hosted" and (self.rate_limit_rate or self.stream_error_rate):
            raise ValueError(
                "--rate-limit-rate and --stream-error-rate are a hosted API's faults: "
                "use them with --flavor hosted"
            )

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
