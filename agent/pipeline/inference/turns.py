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

from agent.datasets.turn_fields import turn_id as turn_id
from agent.pipeline.tokenizer.special import special_ids
from agent.pipeline.tokenizer.think import tokenizer_think_pair

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


def visible_ids(tokenizer: Any, ids: Sequence[int]) -> Sequence[int]:
    """An answer less the special token it stopped on: the template writes its own end of turn."""
    if ids and ids[-1] in special_ids(tokenizer):
        return ids[:-1]
    return ids


def history_text(tokenizer: Any, text: str, drop_reasoning: bool) -> str:
    """What an earlier answer is in later history: without its reasoning when asked to drop it.

    A block closed by the think-end marker goes with the marker; one the answer opened and a
    length cut left open goes with everything after its opener.
    """
    markers = tokenizer_think_pair(tokenizer) if drop_reasoning else None
    if markers is None:
        return text
    opener, closer = markers[0], markers[1]
    if closer in text:
        return text.rsplit(closer, 1)[1].lstrip()
    if opener in text:
        return text.split(opener, 1)[0].rstrip()
    return text


def history_answers(
    tokenizer: Any, answers: Sequence[Sequence[int]], drop_reasoning: bool
) -> list[str]:
    """Each earlier answer as later turns' history holds it, in text (what a chat API is sent)."""
    return [
        history_text(tokenizer, answer_text(tokenizer, visible_ids(tokenizer, ids)), drop_reasoning)
        for ids in answers
    ]


def turn_prompt(
    tokenizer: Any, plan: ConversationPlan, answers: Sequence[Sequence[int]], turn: int,
    template_kwargs: dict[str, Any], drop_reasoning: bool = False,
) -> TurnPrompt:  # fmt: skip
    """The ids turn `turn` (from 0) is sent: the template's text, earlier answers as exact ids.

    The template renders the history with each earlier answer's text (less the special token it
    stopped on, which the template writes itself); the whole text is tokenized as the template's
    own tokenization does, and where an answer's text stands unchanged on token boundaries its
    exact ids replace those tokens (its stop token too, when the template wrote the same one).
    An answer the template rewrote, or whose text tokens straddle, stays as the template's text.
    """
    shown = history_answers(tokenizer, answers[:turn], drop_reasoning)
    rendered = _render(tokenizer, turn_messages(plan, shown, turn), template_kwargs)
    starts = _answer_starts(tokenizer, plan, shown, turn, template_kwargs, rendered)
    places = [
        _place(tokenizer, rendered, start, answers[k], shown[k], drop_reasoning)
        for k, start in enumerate(starts)
    ]
    return _spliced(tokenizer, rendered, places)


@dataclass(frozen=True, slots=True)
class _Place:
    """Where an earlier answer's text stands in the rendering, and the ids that take its place."""

    start: int
    end: int
    ids: Sequence[int]
    stop: int | None = None
    """The special token the answer stopped on, when its text is placed without it: the
    template's own end of turn that follows is taken for it where it is the same token."""


def _place(
    tokenizer: Any, rendered: str, start: int | None, ids: Sequence[int], shown: str, drop: bool
) -> _Place | None:
    if start is None:
        return None
    visible = visible_ids(tokenizer, ids)
    if drop and shown != answer_text(tokenizer, visible):
        return None  # its reasoning was dropped: the history holds other text than it generated
    stop = ids[-1] if len(visible) < len(ids) else None
    for exact in (ids, visible):
        text = answer_text(tokenizer, exact)
        if rendered.startswith(text, start):
            return _Place(start, start + len(text), exact, stop if exact is visible else None)
    return None


def _spliced(tokenizer: Any, rendered: str, places: list[_Place | None]) -> TurnPrompt:
    """The rendering's ids with each placed answer's exact ids where its text's tokens were."""
    try:
        encoded = tokenizer(rendered, add_special_tokens=False, return_offsets_mapping=True)
        offsets = [tuple(pair) for pair in encoded["offset_mapping"]]
    except (NotImplementedError, KeyError, TypeError, ValueError):  # a tokenizer without offsets
        return _spliced_piecewise(tokenizer, rendered, places)
    text_ids = list(encoded["input_ids"])
    ids: list[int] = []
    spans: list[tuple[int, int] | None] = []
    taken = 0
    for place in places:
        bounds = _token_bounds(offsets, place, taken) if place is not None else None
        if place is None or bounds is None:
            spans.append(None)
            continue
        first, last = bounds
        ids.extend(text_ids[taken:first])
        stop = [place.stop] if place.stop is not None else []
        ends_on_stop = bool(stop) and text_ids[last : last + 1] == stop
        exact = [*place.ids, *(stop if ends_on_stop else [])]
        spans.append((len(ids), len(ids) + len(exact)))
        ids.extend(exact)
        taken = last + ends_on_stop
    ids.extend(text_ids[taken:])
    return TurnPrompt(ids, spans)


def _token_bounds(
    offsets: list[tuple[int, ...]], place: _Place, taken: int
) -> tuple[int, int] | None:
    """The tokens that cover exactly [start, end) of the text, or None if a token straddles."""
    first = next((i for i in range(taken, len(offsets)) if offsets[i][1] > place.start), None)
    if first is None or offsets[first][0] != place.start:
        return None
    last = next((i for i in range(first, len(offsets)) if offsets[i][0] >= place.end), len(offsets))
    if last == first or offsets[last - 1][1] != place.end:
        return None
    return first, last


def _spliced_piecewise(tokenizer: Any, rendered: str, places: list[_Place | None]) -> TurnPrompt:
    """The same for a tokenizer that gives no offsets: the text between answers encoded apart."""
    ids: list[int] = []
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for place in places:
        if place is None or place.start < cursor:
            spans.append(None)
            continue
        ids.extend(_encode(tokenizer, rendered[cursor : place.start]))
        stop_text = answer_text(tokenizer, [place.stop]) if place.stop is not None else ""
        ends_on_stop = bool(stop_text) and rendered.startswith(stop_text, place.end)
        exact = [*place.ids, *([place.stop] if ends_on_stop and place.stop is not None else [])]
        spans.append((len(ids), len(ids) + len(exact)))
        ids.extend(exact)
        cursor = place.end + (len(stop_text) if ends_on_stop else 0)
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


def _encode(tokenizer: Any, text: str) -> list[int]:
    """Ids of a piece of rendered template text, as apply_chat_template tokenizes it."""
    if not text:
        return []
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None
