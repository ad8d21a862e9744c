"""The conversation row of one answer, and the round trip that proves it reproduces the tokens.

The assistant turn is decoded from the output ids exactly as the model emitted them (special
tokens and reasoning markers kept, no clean-up of spaces); when the chat template opened the turn
with a think marker, the turn starts with that marker, as the model saw it. A stop token the
template writes itself (the end of turn) is left to the template.

The round trip renders the row with the tokenizer's chat template and tokenizes the text as
SpecForge's data loader does (`apply_chat_template(..., tokenize=False)`, then
`tokenizer(text, add_special_tokens=False)`), and compares the ids with the ids sent plus the ids
generated. A template that drops the think markers of a past assistant turn (DeepSeek-R1's keeps
only what follows `</think>`) or a text that tokenizes differently is caught here, per record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.pipeline.export.marks import TokenFacts
from agent.pipeline.inference.prompts import Prompt

CONTEXT_TOKENS = 4
"""Tokens shown on each side of the first differing position."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Where a rendered conversation first differs from the tokens the model saw and produced."""

    answer_id: str
    position: int
    """Index into prompt + output ids (-1 when the conversation could not be rendered at all)."""
    where: str
    """prompt, answer, or render (the template refused the row)."""
    expected: tuple[str, ...]
    """The tokens sent and generated around the position, decoded one by one."""
    rendered: tuple[str, ...]
    """The template's tokens around the same position."""
    detail: str = ""

    def as_record(self) -> dict[str, Any]:
        """The JSON form for quality.json."""
        return {
            "id": self.answer_id, "position": self.position, "where": self.where,
            "expected": list(self.expected), "rendered": list(self.rendered), "detail": self.detail,
        }  # fmt: skip


def decode(tokenizer: Any, ids: list[int]) -> str:
    """The text of `ids` exactly: special tokens kept, spaces not cleaned up."""
    return str(tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False))


def conversation(
    tokenizer: Any, prompt: Prompt, sent: list[int], answer: list[int], facts: TokenFacts
) -> list[dict[str, Any]]:
    """The SpecForge conversation of one answer (`answer`: output ids less a template stop)."""
    if prompt.messages is not None:
        opened_at = facts.opener_start(sent)
        turn = sent[opened_at:] + answer if opened_at is not None else answer
        return [*prompt.messages, {"role": "assistant", "content": decode(tokenizer, turn)}]
    user = prompt.text if prompt.text is not None else decode(tokenizer, prompt.input_ids or [])
    return [
        {"role": "user", "content": user},
        {"role": "assistant", "content": decode(tokenizer, answer)},
    ]


def schema_problem(messages: list[Any]) -> str | None:
    """Why SpecForge would refuse this conversation, or None (its conversation_validation rules).

    Every message an object with non-empty string content; system messages only before the
    first user message; then user and assistant in turn, starting with user.
    """
    expected, saw_user = "user", False
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"message {index} is not an object"
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, str) or not content.strip():
            return f"message {index} ({role}) has no text content"
        if role == "system" and not saw_user:
            continue
        if role != expected:
            return f"message {index} is {role!r} where {expected!r} was expected"
        saw_user, expected = True, "assistant" if role == "user" else "user"
    return None if saw_user else "no user message"


def round_trip(
    tokenizer: Any, answer_id: str, messages: list[dict[str, Any]], sent: list[int],
    output: list[int],
) -> Mismatch | None:  # fmt: skip
    """None when the rendered, re-tokenized conversation starts with exactly sent + output ids."""
    expected = sent + output
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        rendered = list(tokenizer(str(text), add_special_tokens=False)["input_ids"])
    except Exception as exc:  # a template may refuse a row (raise_exception in jinja)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Mismatch(answer_id, -1, "render", (), (), f"the chat template failed: {first}")
    if rendered[: len(expected)] == expected:
        return None
    position = next(
        (i for i, (a, b) in enumerate(zip(expected, rendered, strict=False)) if a != b),
        min(len(expected), len(rendered)),
    )
    return Mismatch(
        answer_id, position, "prompt" if position < len(sent) else "answer",
        _window(tokenizer, expected, position), _window(tokenizer, rendered, position),
    )  # fmt: skip


def _window(tokenizer: Any, ids: list[int], position: int) -> tuple[str, ...]:
    start = max(0, position - CONTEXT_TOKENS)
    return tuple(decode(tokenizer, [i]) for i in ids[start : position + CONTEXT_TOKENS + 1])
