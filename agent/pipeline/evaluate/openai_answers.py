"""A vLLM answer to the evaluation's `/v1/completions` request: completion tokens, first token.

The body is vLLM 0.32's completion request (entrypoints/openai/completion/protocol.py): the prompt
as ids, `max_tokens` always set (its default is 16), `ignore_eos` among its extra sampling fields,
and with `stream`, `stream_options.include_usage` so the last event carries `usage`. The count is
`usage.completion_tokens`; a stream's first event with text or ids is the first token. A field of
the wrong type or out of range is an error answer, never a figure.
"""

from __future__ import annotations

from typing import Any

from agent.datasets.response_lines import MAX_RESPONSE_TOKENS


def completion_body(
    model: str, ids: list[int], max_new_tokens: int, temperature: float, stream: bool,
    ignore_eos: bool,
) -> dict[str, Any]:  # fmt: skip
    """The /v1/completions body for one prompt."""
    body: dict[str, Any] = {"model": model, "prompt": ids, "max_tokens": max_new_tokens,
                            "temperature": temperature, "stream": stream}  # fmt: skip
    if ignore_eos:
        body["ignore_eos"] = True
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def completion_tokens(body: Any) -> int | str:
    """`usage.completion_tokens` of a whole answer or the stream's last event, or why not."""
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if type(tokens) is not int:
        return "the answer has no usage.completion_tokens"
    if not 0 <= tokens <= MAX_RESPONSE_TOKENS:
        return f"completion_tokens is {tokens:,}, not a count"
    return tokens


def has_first_token(event: dict[str, Any]) -> bool:
    """Whether a stream event carries generated text or ids (not the usage-only last one)."""
    choices = event.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    return bool(choices[0].get("text") or choices[0].get("token_ids"))
