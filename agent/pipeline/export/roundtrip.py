"""The conversation row of one answer, and the round trip that proves it reproduces the tokens.

The assistant turn is decoded from the output ids exactly as the model emitted them (special
tokens and reasoning markers kept, no clean-up of spaces); when the chat template opened the turn
with a think marker, the turn starts with that marker, as the model saw it. A stop token the
template writes itself (the end of turn) is left to the template.

The round trip renders the row as SpecForge's trainer does with the template the user named
(specforge_render.py: its system prompt, its loss spans, `train_only_last_turn: true`) and
compares the whole sequence and the whole loss mask with the ids sent (no loss) and the ids
generated (loss), position by position. An injected system prompt, an end of turn the model never
wrote, a think block the template rewrites, a text that tokenizes differently or loss on the
wrong tokens are each caught here, per record, with a reason; such a row is left out of the
conversation form (ids.jsonl keeps every record exactly).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.pipeline.export.marks import TokenFacts
from agent.pipeline.export.specforge_render import Rendered, render
from agent.pipeline.export.specforge_templates import SpecForgeTemplate
from agent.pipeline.inference.prompts import Prompt

CONTEXT_TOKENS = 4
"""Tokens shown on each side of the first differing position."""

RENDER_FAILED = "the chat template fails on it"
SYSTEM_ADDED = "the template adds a system prompt the model never saw"
PROMPT_DIFFERS = "the prompt renders to other ids than were sent"
ANSWER_DIFFERS = "the answer renders to other ids than were generated"
CUT_CLOSED = (
    "cut at the length limit: the trainer closes the turn with tokens the model never wrote"
)
ADDED_AFTER = "the trainer adds tokens after the end of turn the model wrote"
LOSS_ON_PROMPT = "loss on tokens of the prompt"
LOSS_MISSING = "no loss on tokens the model generated"
NOT_A_CHAT = "a plain-text or ids prompt: the model saw no chat turns, SpecForge would add them"
REASONING_DROPPED = (
    "--reasoning drop: its reasoning gets no loss, which SpecForge's rendering cannot say; "
    "in ids.jsonl with that loss"
)
EXPECTED_REASONS = frozenset({CUT_CLOSED, NOT_A_CHAT})
"""Left out as a matter of course, not a sign of a wrong template: not counted as mismatches."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Where a rendered conversation first differs from the tokens the model saw and produced."""

    answer_id: str
    position: int
    """Index into prompt + output ids (-1 when the conversation could not be rendered at all)."""
    where: str
    """prompt, answer, after (tokens past the answer), or render (the template refused the row)."""
    expected: tuple[str, ...]
    """The tokens sent and generated around the position, decoded one by one."""
    rendered: tuple[str, ...]
    """The template's tokens around the same position."""
    detail: str = ""
    reason: str = ""

    def as_record(self) -> dict[str, Any]:
        """The JSON form for quality.json."""
        return {
            "id": self.answer_id, "position": self.position, "where": self.where,
            "expected": list(self.expected), "rendered": list(self.rendered), "detail": self.detail,
            "reason": self.reason,
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
    tokenizer: Any, template: SpecForgeTemplate, answer_id: str, messages: list[dict[str, Any]],
    sent: list[int], output: list[int], finish: str,
) -> Mismatch | None:  # fmt: skip
    """None when SpecForge trains on exactly sent + output, with loss exactly on output."""
    try:
        rendered = render(tokenizer, template, messages, train_only_last_turn=True)
    except Exception as exc:  # a template may refuse a row (raise_exception in jinja)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return Mismatch(answer_id, -1, "render", (), (), first[:200], RENDER_FAILED)
    expected = sent + output
    ids = rendered.input_ids
    if ids == expected:
        return _mask_mismatch(tokenizer, answer_id, rendered, len(sent), len(output))
    position = next(
        (i for i, (a, b) in enumerate(zip(expected, ids, strict=False)) if a != b), None
    )
    if position is None and len(ids) > len(expected):
        where, position = "after", len(expected)
        reason = CUT_CLOSED if finish == "length" else ADDED_AFTER
    else:
        position = min(len(expected), len(ids)) if position is None else position
        where = "prompt" if position < len(sent) else "answer"
        reason = _id_reason(where, rendered)
    return Mismatch(
        answer_id, position, where, _window(tokenizer, expected, position),
        _window(tokenizer, ids, position), reason=reason,
    )  # fmt: skip


def _id_reason(where: str, rendered: Rendered) -> str:
    if where == "prompt":
        return SYSTEM_ADDED if rendered.system_added else PROMPT_DIFFERS
    return ANSWER_DIFFERS


def _mask_mismatch(
    tokenizer: Any, answer_id: str, rendered: Rendered, prompt: int, output: int
) -> Mismatch | None:
    expected = [0] * prompt + [1] * output
    if rendered.loss_mask == expected:
        return None
    position = next(
        i for i, (a, b) in enumerate(zip(expected, rendered.loss_mask, strict=True)) if a != b
    )
    where = "prompt" if position < prompt else "answer"
    window = _window(tokenizer, rendered.input_ids, position)
    detail = f"{sum(rendered.loss_mask[:prompt])} prompt tokens with loss, " + (
        f"{output - sum(rendered.loss_mask[prompt:])} generated tokens without"
    )
    reason = LOSS_ON_PROMPT if where == "prompt" else LOSS_MISSING
    return Mismatch(answer_id, position, where, window, window, detail, reason)


def _window(tokenizer: Any, ids: list[int], position: int) -> tuple[str, ...]:
    start = max(0, position - CONTEXT_TOKENS)
    return tuple(decode(tokenizer, [i]) for i in ids[start : position + CONTEXT_TOKENS + 1])
