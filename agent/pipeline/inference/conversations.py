"""The runner's conversations: which prompts are regenerated turn by turn, and how far each got.

A prompt becomes a conversation when its messages hold an assistant message (the dataset's answer,
dropped and regenerated) or ask for more than one answer (`turns.plan_conversation`); a prompt of
plain user and system messages stays one record under its own id, as before. Each turn is its own
record (`id#turnN`), written when answered, so the budget, resume and every reader count turns
as responses. A conversation resumes at its first turn without a record, from the answers of the
turns before it, read back from the responses file; one whose records are not the first turns in
order (a line removed by hand) is not guessed at: it is marked failed with the way to redo it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.datasets.file_lines import LineBlock, LineBlocks
from agent.datasets.response_lines import MAX_ID_CHARS, parse_response_line
from agent.datasets.turn_fields import TURN_MARK
from agent.host.regular_files import open_regular
from agent.pipeline.inference.prompts import Prompt, PromptsError
from agent.pipeline.inference.turns import ConversationPlan, plan_conversation, turn_id

_MARK = TURN_MARK.encode()


@dataclass
class Conversation:
    """One conversation: its turns, and the answers of those done while it is under way."""

    prompt: Prompt
    plan: ConversationPlan
    turns_done: int = 0
    answers: list[list[int]] = field(default_factory=list)
    """Output ids of each turn done, kept only until the last turn is written."""

    @property
    def done(self) -> bool:
        """Every turn has its record."""
        return self.turns_done >= self.plan.turns

    def record_id(self, turn: int) -> str:
        """The record id of turn `turn` (from 0)."""
        return turn_id(self.prompt.id, turn + 1)

    def answered(self, output_ids: list[int]) -> None:
        """One more turn written; the answers go once the conversation is done."""
        self.turns_done += 1
        self.answers.append(output_ids)
        if self.done:
            self.answers = []


@dataclass
class ConversationCounts:
    """How far a run's conversations got, counted as turns are written (resumed ones included)."""

    conversations: int = 0
    conversations_done: int = 0
    turns: int = 0
    turns_done: int = 0

    @classmethod
    def of(cls, found: dict[str, Conversation]) -> ConversationCounts:
        """The counts as resuming left them."""
        return cls(
            len(found), sum(c.done for c in found.values()),
            sum(c.plan.turns for c in found.values()), sum(c.turns_done for c in found.values()),
        )  # fmt: skip

    def answered(self, done: bool) -> None:
        """One more turn written; `done` when it was its conversation's last."""
        self.turns_done += 1
        self.conversations_done += done

    def fields(self) -> dict[str, int]:
        """runner.json's fields."""
        return {
            "conversations": self.conversations, "conversations_done": self.conversations_done,
            "turns": self.turns, "turns_done": self.turns_done,
        }  # fmt: skip


def conversations_of(prompts: Iterable[Prompt], turns: str) -> dict[str, Conversation]:
    """The prompts regenerated turn by turn (none with `--turns last`), by id.

    PromptsError when a turn's record id is the id of another prompt.
    """
    if turns != "all":
        return {}
    prompts = list(prompts)
    found = {}
    for prompt in prompts:
        if prompt.messages is None or _uses_tools(prompt.messages):
            continue
        plan = plan_conversation(prompt.messages)
        if plan.turns and (plan.turns > 1 or len(plan.segments[0]) != len(prompt.messages)):
            found[prompt.id] = Conversation(prompt, plan)
    _refuse_clashing_ids(prompts, found)
    return found


def _uses_tools(messages: list[Any]) -> bool:
    """A conversation with tool calls or results: its turns answer tools, kept as written."""
    return any(
        isinstance(m, dict) and (m.get("role") == "tool" or m.get("tool_calls")) for m in messages
    )


def _refuse_clashing_ids(prompts: list[Prompt], found: dict[str, Conversation]) -> None:
    ids = {prompt.id: prompt.line_no for prompt in prompts}
    for conversation in found.values():
        longest = conversation.record_id(conversation.plan.turns - 1)
        if len(longest) > MAX_ID_CHARS:
            raise PromptsError(
                f"prompt {conversation.prompt.id!r} (line {conversation.prompt.line_no}) has "
                f"{conversation.plan.turns} turns; its last turn's id {longest[:40]!r}... would "
                f"be {len(longest):,} characters, over the {MAX_ID_CHARS:,} a record may have: "
                "give it a shorter id"
            )
        for turn in range(conversation.plan.turns):
            clash = ids.get(conversation.record_id(turn))
            if clash is not None:
                raise PromptsError(
                    f"prompt {conversation.prompt.id!r} (line {conversation.prompt.line_no}) has "
                    f"several turns; its turn {turn + 1} would be recorded as "
                    f"{conversation.record_id(turn)!r}, the id of the prompt on line {clash}: "
                    "rename one of them"
                )


def resume_conversations(
    found: dict[str, Conversation], done_ids: set[str], responses: Path
) -> list[tuple[Prompt, str]]:
    """Set each conversation's turns done and read back the answers an unfinished one needs.

    Returns the conversations whose records are not their first turns in order, with why.
    """
    broken: list[tuple[Prompt, str]] = []
    unfinished: list[Conversation] = []
    for conversation in found.values():
        done = [conversation.record_id(t) in done_ids for t in range(conversation.plan.turns)]
        reached = done.index(False) if False in done else len(done)
        if any(done[reached:]):
            broken.append((conversation.prompt, _out_of_order(conversation, done)))
            continue
        conversation.turns_done = reached
        if 0 < reached < conversation.plan.turns:
            unfinished.append(conversation)
    wanted = {c.record_id(t) for c in unfinished for t in range(c.turns_done)}
    answers = _answers(responses, wanted) if wanted else {}
    for conversation in unfinished:
        ids = [answers.get(conversation.record_id(t)) for t in range(conversation.turns_done)]
        if None in ids:
            broken.append((conversation.prompt, _unreadable(conversation, ids.index(None))))
            continue
        conversation.answers = [i for i in ids if i is not None]
    return broken


def _unreadable(conversation: Conversation, turn: int) -> str:
    return (
        f"the record of turn {turn + 1} ({conversation.record_id(turn)!r}) could not be read "
        "back whole to continue the conversation from; remove its lines to regenerate it"
    )


def _out_of_order(conversation: Conversation, done: list[bool]) -> str:
    missing = done.index(False) + 1
    later = [t + 1 for t, is_done in enumerate(done) if is_done and t + 1 > missing]
    return (
        f"turn {missing} has no record but turn {later[0]} has: the conversation's records are "
        f"not its first turns in order. Remove its lines ({conversation.record_id(0)!r}...) from "
        "the responses file to regenerate it"
    )


def _answers(path: Path, wanted: set[str]) -> dict[str, list[int]]:
    """The output ids of the records `wanted`, read from the responses file (first one wins)."""
    found: dict[str, list[int]] = {}
    with open_regular(path) as handle:
        for item in LineBlocks(handle, 0, os.fstat(handle.fileno()).st_size):
            for _, line in item.lines() if isinstance(item, LineBlock) else ():
                response = parse_response_line(line) if _MARK in line else None
                if response is not None and response.id in wanted and response.id not in found:
                    found[response.id] = response.ids()
    return found
