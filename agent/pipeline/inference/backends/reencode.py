"""Turning a text-only answer back into token ids with the target's tokenizer and chat template.

A hosted API returns text, not ids. What a drafter trains on is the target's token stream, so
the answer is rebuilt as the target would have written it: the conversation is rendered with the
assistant turn appended (reasoning wrapped in the think markers, as the template writes a turn),
and the ids past the prompt's are the answer, through the end-of-turn token (none after a length
cut). openai-compat-wire.md §4 lists where this differs from what the model sampled; a template
that drops past reasoning is one, and shows as a length that differs from the server's count.
"""

from __future__ import annotations

from typing import Any

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class Reencoder:
    """Re-encodes answers with one `transformers` tokenizer (the target's)."""

    def __init__(self, tokenizer: Any, template_kwargs: dict[str, Any] | None = None) -> None:
        self.tokenizer = tokenizer
        self.end_of_turn = tokenizer.eos_token_id
        self.template_kwargs = template_kwargs or {}

    def answer_ids(
        self, messages: list[dict[str, Any]], reasoning: str | None, content: str, finish: str
    ) -> tuple[list[int], list[int]]:
        """The prompt's ids and the ids the target would have generated for this turn."""
        prompt_ids = self._render(messages, add_generation_prompt=True)
        turn = {"role": "assistant", "content": assistant_text(reasoning, content)}
        whole = self._render([*messages, turn], add_generation_prompt=False)
        answer = whole[_common_prefix(prompt_ids, whole) :]
        return prompt_ids, _through_end_of_turn(answer, self.end_of_turn, finish == "stop")

    def _render(self, messages: list[dict[str, Any]], add_generation_prompt: bool) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=add_generation_prompt,
            tokenize=True,
            **self.template_kwargs,
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def assistant_text(reasoning: str | None, content: str) -> str:
    """The turn's text with its reasoning in think markers, in the whitespace Qwen3/R1 write."""
    if not reasoning:
        return content
    return f"{THINK_OPEN}\n{reasoning.strip()}\n{THINK_CLOSE}\n\n{content.lstrip()}"


def _common_prefix(left: list[int], right: list[int]) -> int:
    size = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        size += 1
    return size


def _through_end_of_turn(ids: list[int], end_of_turn: int | None, stopped: bool) -> list[int]:
    """Cut after the first end-of-turn: the model never generated what follows it.

    After a length cut the model never reached the end of its turn, so that goes too.
    """
    if end_of_turn is None or end_of_turn not in ids:
        return ids
    at = ids.index(end_of_turn)
    return ids[: at + 1] if stopped else ids[:at]
