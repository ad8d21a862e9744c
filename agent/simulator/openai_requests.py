"""Reading an OpenAI-compatible request the way each server reads it, with its messages.

vLLM 0.34.0 (0.33.0 alike; paths under `vllm/`, trainers-and-servers-2026-12.md), for the vllm
and hosted flavours:
- a completion prompt is token ids or text (entrypoints/openai/completion/protocol.py:53,634),
  id prompts get no BOS and are not re-tokenized (renderers/base.py:716);
- an unknown `model` is a 404 "The model `x` does not exist. Valid aliases: …"
  (entrypoints/serve/engine/serving.py:49-84);
- `max_tokens` (chat: `max_completion_tokens` first) past the context is a 400 "max_tokens=N
  cannot be greater than max_model_len=M. Please request fewer output tokens."
  (renderers/params.py:272-284, the names from chat_completion/protocol.py:686-703);
- a prompt past the context is a 400 "This model's maximum context length is M tokens. However,
  your prompt contains N input tokens, …" (renderers/params.py:535-552);
- otherwise `max_tokens` (16 by default for completions, completion/protocol.py:64; the rest of
  the context for chat) is clamped to the context left after the prompt
  (entrypoints/serve/utils/api_utils.py:234-270): 0.33 and 0.34 clamp where 0.20 refused;
  a prompt of exactly M tokens leaves 0, refused as "max_tokens must be at least 1, got 0."
  (sampling_params.py:695-700).
SGLang 0.5.23 (the sglang flavour's /v1): the `model` name is not checked, and the context
checks are /generate's, no clamping (managers/tokenizer_manager.py:1337-1376, validation.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from agent.simulator.flavors import Flavor
from agent.simulator.validation import RequestValueError, check_length

DEFAULT_MAX_TOKENS = 16


class OpenAIRequestError(ValueError):
    """The request is refused: HTTP `status` with the server's message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class RequestRules:
    """What a request is checked against, and whose rules check it."""

    served_model: str
    context_length: int
    flavor: Flavor


@dataclass(frozen=True, slots=True)
class OpenAIPrompt:
    """One checked request: what to generate from and how much."""

    prompt_ids: list[int]
    max_tokens: int
    stream: bool
    return_token_ids: bool
    include_usage: bool
    output_ids_in_sglext: bool = False
    seed: int | None = None
    """The request's seed: a seeded answer is keyed on it, as a real sampler draws from it."""
    """SGLang's `return_output_ids_in_sglext` (serving_chat.py:1283; its header is not simulated)."""


def completion_prompt(body: Any, rules: RequestRules) -> OpenAIPrompt:
    """A /v1/completions body with a single prompt (ids or text)."""
    body = _object(body, rules)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(_is_int(i) for i in prompt):
        ids = list(prompt)
    elif isinstance(prompt, str) and prompt:
        ids = text_ids(prompt)
    else:
        raise OpenAIRequestError("prompt must be one list of token ids or one non-empty string")
    return _checked(body, ids, rules, chat=False)


def chat_prompt(body: Any, rules: RequestRules) -> OpenAIPrompt:
    """A /v1/chat/completions body; the simulated template is the messages' JSON."""
    body = _object(body, rules)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise OpenAIRequestError("messages must be a non-empty list")
    rendered = json.dumps(messages, sort_keys=True)
    arguments = body.get("chat_template_kwargs")
    if arguments is not None and not isinstance(arguments, dict):
        raise OpenAIRequestError("chat_template_kwargs must be an object")
    if arguments:  # the template renders its arguments (enable_thinking...) into the prompt
        rendered += " " + json.dumps(arguments, sort_keys=True)
    return _checked(body, text_ids(rendered), rules, chat=True)


def text_ids(text: str) -> list[int]:
    """Simulated prompt tokenization: one stable id per whitespace-separated word."""
    return [
        int.from_bytes(hashlib.sha256(word.encode()).digest()[:2], "big") for word in text.split()
    ]


def _object(body: Any, rules: RequestRules) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise OpenAIRequestError("the request body must be a JSON object")
    model = body.get("model")
    if rules.flavor != "sglang" and model is not None and model != rules.served_model:
        raise OpenAIRequestError(
            f"The model `{model}` does not exist. Valid aliases: {rules.served_model}.", 404
        )
    return body


def _checked(body: dict[str, Any], ids: list[int], rules: RequestRules, chat: bool) -> OpenAIPrompt:
    lengths = _sglang_max_tokens if rules.flavor == "sglang" else vllm_max_tokens
    max_tokens = lengths(body, len(ids), rules.context_length, chat)
    _check_sampling(body, rules.flavor)
    options = body.get("stream_options") or {}
    return OpenAIPrompt(
        prompt_ids=ids,
        max_tokens=max_tokens,
        stream=bool(body.get("stream")),
        return_token_ids=bool(body.get("return_token_ids")),
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
        output_ids_in_sglext=bool(body.get("return_output_ids_in_sglext")),
        seed=body.get("seed"),
    )


def vllm_max_tokens(body: dict[str, Any], prompt_tokens: int, context: int, chat: bool) -> int:
    """The tokens vLLM 0.34 lets this request generate, or its refusal, in its order."""
    param, wanted = _wanted(body, chat)
    if wanted is not None and wanted > context:  # TokenizeParams, before tokenizing
        raise OpenAIRequestError(
            f"{param}={wanted} cannot be greater than max_model_len={context}. "
            "Please request fewer output tokens."
        )
    if prompt_tokens > context:
        raise OpenAIRequestError(
            f"This model's maximum context length is {context} tokens. However, your prompt "
            f"contains {prompt_tokens} input tokens, which exceeds this limit even without any "
            "output tokens. Please reduce the length of the input prompt."
        )
    default = context - prompt_tokens if chat else DEFAULT_MAX_TOKENS
    max_tokens = min(context - prompt_tokens, default if wanted is None else wanted)
    if max_tokens < 1:
        raise OpenAIRequestError(f"max_tokens must be at least 1, got {max_tokens}.")
    return max_tokens


def _sglang_max_tokens(body: dict[str, Any], prompt_tokens: int, context: int, chat: bool) -> int:
    """SGLang's: max_tokens > 0 (protocol.py:378-408), then /generate's context checks."""
    param, wanted = _wanted(body, chat)
    if wanted is not None and wanted < 1:
        raise OpenAIRequestError(f"{param} must be positive, got {wanted}.")
    if wanted is None:
        wanted = max(context - prompt_tokens, 0) if chat else DEFAULT_MAX_TOKENS
    try:
        check_length(prompt_tokens, wanted, context)
    except RequestValueError as exc:
        raise OpenAIRequestError(str(exc)) from None
    return wanted


def _wanted(body: dict[str, Any], chat: bool) -> tuple[str, int | None]:
    """Which field asks for the length, and what it asks; chat prefers max_completion_tokens."""
    param = (
        "max_completion_tokens"
        if chat and body.get("max_completion_tokens") is not None
        else "max_tokens"
    )
    wanted = body.get(param)
    if wanted is not None and not _is_int(wanted):
        raise OpenAIRequestError(f"{param} must be an integer, got {wanted!r}.")
    return param, wanted


def _check_sampling(body: dict[str, Any], flavor: str) -> None:
    """Each server's own checks and words.

    vLLM's SamplingParams._verify_args (sampling_params.py:671-688 of 0.32) and SGLang's
    SamplingParams.verify (sampling_params.py:261-311 of 0.5.23).
    """
    _check_top_k(body.get("top_k"), flavor)
    min_p, seed = body.get("min_p"), body.get("seed")
    if min_p is not None and (not _is_number(min_p) or not 0 <= min_p <= 1):
        raise OpenAIRequestError(f"min_p must be in [0, 1], got {min_p}.")
    if seed is not None and not _is_int(seed):
        raise OpenAIRequestError(f"seed must be an integer, got {seed!r}.")
    temperature = body.get("temperature")
    if temperature is not None and (not _is_number(temperature) or temperature < 0):
        raise OpenAIRequestError(f"temperature must be non-negative, got {temperature}.")
    top_p = body.get("top_p")
    if top_p is not None and (not _is_number(top_p) or not 0 < top_p <= 1):
        raise OpenAIRequestError(f"top_p must be in (0, 1], got {top_p}.")


def _check_top_k(top_k: Any, flavor: str) -> None:
    """VLLM takes 0 or -1 for off; SGLang only -1."""
    if top_k is None:
        return
    off = (-1,) if flavor == "sglang" else (0, -1)
    if not _is_int(top_k) or (top_k < 1 and top_k not in off):
        raise OpenAIRequestError(
            f"top_k must be -1 (disable) or at least 1, got {top_k}."
            if flavor == "sglang"
            else f"top_k must be 0 (disable), or at least 1, got {top_k}."
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
