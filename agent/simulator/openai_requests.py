"""Reading an OpenAI-compatible request the way vLLM 0.33 reads it, with its messages.

Sources (openai-compat-wire.md §1-2, paths under `vllm/`): a completion prompt is token ids or
text (entrypoints/openai/completion/protocol.py:53,634), id prompts get no BOS and are not
re-tokenized (renderers/base.py:716); `max_tokens` defaults to 16 (protocol.py:64) and is
clamped silently to the context left after the prompt (entrypoints/serve/utils/api_utils.py:
234-270); a prompt as long as the context is a 400 (renderers/params.py:405,544).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_TOKENS = 16


class OpenAIRequestError(ValueError):
    """The request is refused: HTTP `status` with vLLM's message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class OpenAIPrompt:
    """One checked request: what to generate from and how much."""

    prompt_ids: list[int]
    max_tokens: int
    stream: bool
    return_token_ids: bool
    include_usage: bool
    output_ids_in_sglext: bool = False
    """SGLang's `return_output_ids_in_sglext` (serving_chat.py:1283; its header is not simulated)."""


def completion_prompt(body: Any, served_model: str, context_length: int) -> OpenAIPrompt:
    """A /v1/completions body with a single prompt (ids or text)."""
    body = _object(body, served_model)
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and all(_is_int(i) for i in prompt):
        ids = list(prompt)
    elif isinstance(prompt, str) and prompt:
        ids = text_ids(prompt)
    else:
        raise OpenAIRequestError("prompt must be one list of token ids or one non-empty string")
    return _checked(body, ids, context_length)


def chat_prompt(body: Any, served_model: str, context_length: int) -> OpenAIPrompt:
    """A /v1/chat/completions body; the simulated template is the messages' JSON."""
    body = _object(body, served_model)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise OpenAIRequestError("messages must be a non-empty list")
    ids = text_ids(json.dumps(messages, sort_keys=True))
    return _checked(body, ids, context_length)


def text_ids(text: str) -> list[int]:
    """Simulated prompt tokenization: one stable id per whitespace-separated word."""
    return [
        int.from_bytes(hashlib.sha256(word.encode()).digest()[:2], "big") for word in text.split()
    ]


def _object(body: Any, served_model: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise OpenAIRequestError("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served_model:  # entrypoints/serve/engine/serving.py:76
        raise OpenAIRequestError(f"The model `{model}` does not exist.", status=404)
    return body


def _checked(body: dict[str, Any], ids: list[int], context_length: int) -> OpenAIPrompt:
    if len(ids) >= context_length:
        raise OpenAIRequestError(
            f"This model's maximum context length is {context_length} tokens. However, your "
            f"request has {len(ids)} input tokens. Please reduce the length of the input messages."
        )
    wanted = body.get("max_tokens", body.get("max_completion_tokens"))
    if wanted is None:
        wanted = DEFAULT_MAX_TOKENS
    if not _is_int(wanted) or wanted < 1:
        raise OpenAIRequestError(f"max_tokens must be at least 1, got {wanted}.")
    _check_sampling(body)
    options = body.get("stream_options") or {}
    return OpenAIPrompt(
        prompt_ids=ids,
        max_tokens=min(wanted, context_length - len(ids)),
        stream=bool(body.get("stream")),
        return_token_ids=bool(body.get("return_token_ids")),
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
        output_ids_in_sglext=bool(body.get("return_output_ids_in_sglext")),
    )


def _check_sampling(body: dict[str, Any]) -> None:
    temperature = body.get("temperature")
    if temperature is not None and (not _is_number(temperature) or temperature < 0):
        raise OpenAIRequestError(f"temperature must be non-negative, got {temperature}.")
    top_p = body.get("top_p")
    if top_p is not None and (not _is_number(top_p) or not 0 < top_p <= 1):
        raise OpenAIRequestError(f"top_p must be in (0, 1], got {top_p}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
