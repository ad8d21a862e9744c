"""A conversation row turned into ids and a loss mask the way SpecForge 0.2.0's trainer does it.

Follows `specforge/data/parse.py` GeneralParser.parse (and ThinkingParser, which only adds
render arguments) for rows the export writes (`role` and `content` only, user first):
1. the template's system prompt goes first when the row has no system message of its own;
2. the tokenizer's chat template renders the messages (`add_generation_prompt=False`, `tools`
   None; the thinking parser adds `add_special_tokens=False` and, where enabled,
   `enable_thinking=True`), and the text is tokenized with `add_special_tokens=False`;
3. each span from an assistant header to the end of turn (inclusive, or to the text's end) gets
   loss, found with SpecForge's own pattern; its token bounds are the token counts of the text
   before the span's start and end; `train_only_last_turn` keeps the last span only;
4. every occurrence of an ignored text gets no loss.
SpecForge cuts at `max_length` afterwards; the round trip renders uncut and reports the cut apart.
The tests check this against SpecForge's own parser, id by id and mask by mask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agent.pipeline.export.specforge_templates import SpecForgeTemplate


@dataclass(frozen=True, slots=True)
class Rendered:
    """What SpecForge would train on for one row (before its max_length cut)."""

    input_ids: list[int]
    loss_mask: list[int]
    system_added: bool
    """True when the template's system prompt was put in front (the row had none)."""


def render(
    tokenizer: Any, template: SpecForgeTemplate, messages: list[dict[str, Any]],
    train_only_last_turn: bool,
) -> Rendered:  # fmt: skip
    """The ids and loss mask of `messages`; whatever the chat template raises goes up."""
    system_added = bool(template.system_prompt) and messages[0].get("role") != "system"
    if system_added:
        messages = [{"role": "system", "content": template.system_prompt}, *messages]
    text = str(tokenizer.apply_chat_template(messages, **_render_arguments(template)))
    ids = _encode(tokenizer, text)
    mask = [0] * len(ids)
    spans = list(re.finditer(_assistant_pattern(template), text, re.DOTALL))
    for span in spans[-1:] if train_only_last_turn else spans:
        _set(mask, _token_bounds(tokenizer, text, span.start(1), span.end(1)), 1)
    for ignored in template.ignore:
        for found in re.finditer(re.escape(ignored), text):
            _set(mask, _token_bounds(tokenizer, text, found.start(), found.end()), 0)
    return Rendered(ids, mask, system_added)


def _render_arguments(template: SpecForgeTemplate) -> dict[str, Any]:
    arguments: dict[str, Any] = {"tokenize": False, "add_generation_prompt": False, "tools": None}
    if template.thinking:
        arguments["add_special_tokens"] = False
        if template.enable_thinking:
            arguments["enable_thinking"] = True
    return arguments


def _assistant_pattern(template: SpecForgeTemplate) -> str:
    return (
        re.escape(template.assistant_header)
        + r"([\s\S]*?(?:"
        + re.escape(template.end_of_turn)
        + "|$))"
    )


def _encode(tokenizer: Any, text: str) -> list[int]:
    return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]


def _token_bounds(tokenizer: Any, text: str, start: int, end: int) -> tuple[int, int]:
    return len(_encode(tokenizer, text[:start])), len(_encode(tokenizer, text[:end]))


def _set(mask: list[int], bounds: tuple[int, int], value: int) -> None:
    start, end = min(bounds[0], len(mask)), min(bounds[1], len(mask))
    mask[start:end] = [value] * max(0, end - start)
