"""A conversation's turn records joined into what the trainers take: one sequence, loss per turn.

The runner writes each turn of a conversation as its own record, in order (`inference/turns.py`).
The export gathers them by conversation (`TurnCollector`; a conversation is whole at its last turn,
and one a run left unfinished is exported with the turns it has), rebuilds every turn's prompt
with the runner's own function, checks it against what the server counted, and writes:
- one record under the conversation's id: the last turn's prompt and answer, with loss on every
  regenerated answer's exact ids in it (`--loss-turns all`, SpecForge's default), or on the last
  answer only (`--loss-turns last`, its `train_only_last_turn`);
- where the template rewrote an earlier answer in later history (one that drops past reasoning),
  that turn as a record of its own (`ID#turnK`: its prompt and answer), as SpecForge's
  expand_reasoning_conversations does, so no answer goes untrained and none is trained on twice.
Under `--reasoning drop` the reasoning inside each answer gets no loss.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agent.datasets.response_lines import ResponseLine
from agent.datasets.turn_fields import TurnPlace
from agent.pipeline.export.marks import TokenFacts
from agent.pipeline.export.responses import first_difference, prompt_tokens, template_kwargs
from agent.pipeline.inference.turns import ConversationPlan, turn_id, turn_prompt

LOSS_TURNS = ("all", "last")


@dataclass
class TurnLines:
    """The turn records of one conversation, by turn number (from 1)."""

    conversation: str
    turns: int
    lines: dict[int, ResponseLine] = field(default_factory=dict)

    def in_order(self) -> list[ResponseLine]:
        """Turns 1, 2, ... up to the first one missing."""
        ordered: list[ResponseLine] = []
        while len(ordered) + 1 in self.lines:
            ordered.append(self.lines[len(ordered) + 1])
        return ordered


class TurnCollector:
    """Gathers turn records by conversation; hands one over when its last turn arrives."""

    def __init__(self) -> None:
        self.open: dict[str, TurnLines] = {}
        self.handed: set[str] = set()
        """Conversations handed over: a turn of one read again is a duplicate."""
        self.duplicate = False
        """Whether the record last added was a duplicate (not taken)."""

    def add(self, response: ResponseLine, place: TurnPlace) -> TurnLines | None:
        """Take one turn record; the conversation when this was its last turn.

        Returns None and takes nothing for a duplicate (`duplicate` then says so).
        """
        name = place.conversation
        self.duplicate = name in self.handed
        if self.duplicate:
            return None
        gathered = self.open.setdefault(name, TurnLines(name, place.turns))
        self.duplicate = place.turn in gathered.lines or place.turns != gathered.turns
        if not self.duplicate:
            gathered.lines[place.turn] = response
        if len(gathered.in_order()) >= gathered.turns:
            self.handed.add(name)
            return self.open.pop(name)
        return None

    def rest(self) -> Iterator[TurnLines]:
        """The conversations a run left unfinished, in the order they began."""
        while self.open:
            yield self.open.pop(next(iter(self.open)))


@dataclass(frozen=True, slots=True)
class Sequence:
    """One training record: ids and loss mask, and the ids of the answers it trains on."""

    record_id: str
    input_ids: list[int]
    loss_mask: list[int]


@dataclass(frozen=True, slots=True)
class JoinedConversation:
    """What a conversation's turns become; `problem` says why they cannot be used."""

    sequences: list[Sequence]
    answers: list[list[int]]
    prompts: list[list[int]]
    problem: str = ""


def join_turns(
    tokenizer: Any, facts: TokenFacts, plan: ConversationPlan, lines: list[ResponseLine],
    loss_turns: str,
) -> JoinedConversation:  # fmt: skip
    """The records of a conversation's first `len(lines)` turns (see the module's docstring)."""
    answers = [line.ids() for line in lines]
    if len(lines) > plan.turns or lines[0].fields.get("turns") != plan.turns:
        return JoinedConversation([], answers, [], _changed(plan, lines))
    kwargs = template_kwargs(lines[0].fields)
    drop = lines[0].fields.get("reasoning") == "drop"
    prompts: list[list[int]] = []
    spans: list[tuple[int, int] | None] = []
    for index, line in enumerate(lines):
        built = turn_prompt(tokenizer, plan, answers, index, kwargs, drop)
        problem = _sent_otherwise(line, built.input_ids, index)
        if problem is not None:
            return JoinedConversation([], answers, prompts, problem)
        prompts.append(built.input_ids)
        spans = built.spans
    return JoinedConversation(
        _sequences(lines, prompts, answers, spans, loss_turns, facts if drop else None),
        answers, prompts,
    )  # fmt: skip


def _sent_otherwise(line: ResponseLine, built: list[int], index: int) -> str | None:
    """Why the server was sent other ids than this turn renders to, or None."""
    counted = prompt_tokens(line.fields)
    if counted is not None and counted != len(built):
        return (
            f"turn {index + 1} renders to {len(built)} prompt tokens; the server counted {counted}"
        )
    echoed = line.fields.get("prompt_ids")
    if isinstance(echoed, list) and echoed and echoed != built:
        at = first_difference(echoed, built)
        return f"turn {index + 1} renders to other ids than the server echoed (first at {at})"
    return None


def _sequences(
    lines: list[ResponseLine], prompts: list[list[int]], answers: list[list[int]],
    spans: list[tuple[int, int] | None], loss_turns: str, reasoning: TokenFacts | None,
) -> list[Sequence]:  # fmt: skip
    last = len(lines) - 1
    whole = prompts[last] + answers[last]
    mask = [0] * len(whole)
    trained = [(len(prompts[last]), len(whole))]
    if loss_turns == "all":
        trained += [span for span in spans if span is not None]
    for start, end in trained:
        _train(mask, whole, start, end, reasoning)
    conversation = str(lines[0].fields["conversation"])
    records = [Sequence(conversation, whole, mask)]
    if loss_turns == "all":
        for index, span in enumerate(spans):
            if span is None:  # the template rewrote this answer later: it is trained on its own
                alone = prompts[index] + answers[index]
                own = [0] * len(alone)
                _train(own, alone, len(prompts[index]), len(alone), reasoning)
                records.append(Sequence(turn_id(conversation, index + 1), alone, own))
    return records


def _train(
    mask: list[int], ids: list[int], start: int, end: int, reasoning: TokenFacts | None
) -> None:
    """Loss on ids[start:end], less a think block in it when reasoning is dropped.

    A closed block goes from its opener (or the answer's start, when the template opened it) to
    the closer; one a length cut left open goes from its opener to the answer's end.
    """
    mask[start:end] = [1] * (end - start)
    if reasoning is None:
        return
    block = reasoning_block(ids[start:end], reasoning.think_start, reasoning.think_end)
    if block is not None:
        begin, close = start + block[0], start + block[1]
        mask[begin:close] = [0] * (close - begin)


def reasoning_block(
    answer: list[int], opener: int | None, closer: int | None
) -> tuple[int, int] | None:
    """[begin, end) of the answer's think block, or None when it has none."""
    if closer is not None and closer in answer:
        close = len(answer) - answer[::-1].index(closer)
        opened = opener is not None and opener in answer[:close]
        return (answer.index(opener) if opened and opener is not None else 0), close
    if opener is not None and opener in answer:
        return answer.index(opener), len(answer)
    return None


def _changed(plan: ConversationPlan, lines: list[ResponseLine]) -> str:
    return (
        f"the records say {lines[0].fields.get('turns')} turns; the prompt's messages now ask "
        f"for {plan.turns}: prompts.jsonl changed since it was generated"
    )
