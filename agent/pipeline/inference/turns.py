"""A conversation regenerated turn by turn: which turns there are, and what each one is sent.

A `messages` prompt is split at its assistant messages: the dataset's own answers are dropped
(another model wrote them) and an answer is generated wherever one stood, and after a last user
message, in order, each against the model's own earlier answers, as SpecForge's and speculators'
regeneration scripts do. System, user and other messages stay where they are.

What a turn is sent is the chat template's rendering of that history, with each earlier answer's
exact ids put where the template writes its text (`turn_prompt`): the template decides what an
earlier turn keeps (one that drops past reasoning drops it, and that answer is then rendered as
text, its span None). The runner and the export build a turn's ids with this one function, so a
record's spans are the same on both sides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TURN_MARK = "#turn"
"""A turn's record id is the conversation's id, this mark and the turn's number from 1."""
THINK_CLOSE = "</think>"
ANSWER_MARK = "\x00answer {}\x00"
"""Stands for an earlier answer in a second rendering, to find where the template writes it."""


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """The dataset's messages before each turn to generate (assistant messages left out)."""

    segments: tuple[tuple[Any, ...], ...]

    @property
    def turns(self) -> int:
        """How many answers the conversation asks for."""
        return len(self.segments)


@dataclass(frozen=True, slots=True)
class TurnPrompt:
    """The ids one turn is sent, and where each earlier answer's exact ids sit in them."""

    input_ids: list[int]
    spans: list[tuple[int, int] | None]
    """[start, end) of earlier answer k, or None where the template rewrote it (rendered as text)."""


def plan_conversation(messages: Sequence[Any]) -> ConversationPlan:
    """The turns of `messages`: one after each run of messages that holds a user message."""
    segments: list[tuple[Any, ...]] = []
    current: list[Any] = []
    for message in messages:
        if _role(message) != "assistant":
            current.append(message)
            continue
        if any(_role(m) == "user" for m in current):
            segments.append(tuple(current))
            current = []
    if any(_role(m) == "user" for m in current):
        segments.append(tuple(current))
    elif current and segments:  # trailing system or tool messages: kept in the last turn's history
        segments[-1] = (*segments[-1], *current)
    return ConversationPlan(tuple(segments))


def turn_id(conversation_id: str, turn: int) -> str:
    """The record id of turn `turn` (from 1) of a conversation."""
    return f"{conversation_id}{TURN_MARK}{turn}"


def turn_messages(plan: ConversationPlan, answers: Sequence[str], turn: int) -> list[Any]:
    """The history turn `turn` (from 0) is generated after, earlier answers given as text."""
    history: list[Any] = []
    for index in range(turn + 1):
        history.extend(plan.segments[index])
        if index < turn:
            history.append({"role": "assistant", "content": answers[index]})
    return history


def answer_text(tokenizer: Any, ids: Sequence[int]) -> str:
    """The exact text of an answer's ids: special tokens kept, spaces not cleaned up."""
    return str(tokenizer.decode(list(ids), skip_special_tokens=False,
                                clean_up_tokenization_spaces=False))  # fmt: skip


def history_text(text: str, drop_reasoning: bool) -> str:
    """What an earlier answer is in later history: without its reasoning when asked to drop it."""
    if drop_reasoning and THINK_CLOSE in text:
        return text.rsplit(THINK_CLOSE, 1)[1].lstrip()
    return text


def turn_prompt(
    tokenizer: Any, plan: ConversationPlan, answers: Sequence[Sequence[int]], turn: int,
    template_kwargs: dict[str, Any], drop_reasoning: bool = False,
) -> TurnPrompt:  # fmt: skip
    """The ids turn `turn` (from 0) is sent: the template's text, earlier answers as exact ids.

    An earlier answer is written as the template writes its text, end of turn included when the
    model wrote it. Where the template wrote the answer's text unchanged, the answer's exact ids
    take its place; else (the template rewrote it) the rendering's own text is encoded.
    """
    texts = [answer_text(tokenizer, answers[k]) for k in range(turn)]
    visible = [without_end(tokenizer, text) for text in texts]
    shown = [history_text(text, drop_reasoning) for text in visible]
    rendered = _render(tokenizer, turn_messages(plan, shown, turn), template_kwargs)
    starts = _answer_starts(tokenizer, plan, shown, turn, template_kwargs, rendered)
    ids: list[int] = []
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for index, start in enumerate(starts):
        unchanged = shown[index] == visible[index]
        if start is None or start < cursor or not unchanged:
            spans.append(None)
            continue
        if not rendered.startswith(texts[index], start):
            spans.append(None)
            continue
        ids.extend(_encode(tokenizer, rendered[cursor:start]))
        spans.append((len(ids), len(ids) + len(answers[index])))
        ids.extend(answers[index])
        cursor = start + len(texts[index])
    ids.extend(_encode(tokenizer, rendered[cursor:]))
    return TurnPrompt(ids, spans)


def _answer_starts(
    tokenizer: Any, plan: ConversationPlan, shown: Sequence[str], turn: int,
    template_kwargs: dict[str, Any], rendered: str,
) -> list[int | None]:  # fmt: skip
    """Where each earlier answer's text begins in `rendered`, found by the template's own text.

    The history is rendered once more with a mark in place of each answer: the text between
    marks is the template's, so each answer begins where the text before its mark ends.
    """
    marks = [ANSWER_MARK.format(k) for k in range(turn)]
    marked = _render(tokenizer, turn_messages(plan, marks, turn), template_kwargs)
    pieces = _split_at(marked, marks)
    if pieces is None:
        return [None] * turn
    starts: list[int | None] = []
    position = 0
    for index in range(turn):
        if not rendered.startswith(pieces[index], position):
            return starts + [None] * (turn - index)
        position += len(pieces[index])
        starts.append(position)
        if rendered.startswith(shown[index], position):
            position += len(shown[index])
            continue
        following = rendered.find(pieces[index + 1], position)  # the template changed the text
        if following < 0:
            return starts + [None] * (turn - index - 1)
        position = following
    return starts


def _split_at(text: str, marks: Sequence[str]) -> list[str] | None:
    """The text before each mark and after the last; None if a mark is missing or out of order."""
    pieces, position = [], 0
    for mark in marks:
        at = text.find(mark, position)
        if at < 0:
            return None
        pieces.append(text[position:at])
        position = at + len(mark)
    pieces.append(text[position:])
    return pieces


def _render(tokenizer: Any, messages: list[Any], template_kwargs: dict[str, Any]) -> str:
    return str(tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, **template_kwargs
    ))  # fmt: skip


def history_answers(
    tokenizer: Any, answers: Sequence[Sequence[int]], drop_reasoning: bool
) -> list[str]:
    """Each earlier answer as later turns' history holds it, in text (what a chat API is sent)."""
    return [
        history_text(without_end(tokenizer, answer_text(tokenizer, ids)), drop_reasoning)
        for ids in answers
    ]


def without_end(tokenizer: Any, text: str) -> str:
    """The answer's text less a closing end-of-turn token the template writes itself."""
    end = getattr(tokenizer, "eos_token", None)
    if isinstance(end, str) and end and text.endswith(end):
        return text[: -len(end)]
    return text


def _encode(tokenizer: Any, text: str) -> list[int]:
    """Ids of a piece of rendered template text, as apply_chat_template tokenizes it."""
    if not text:
        return []
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None
