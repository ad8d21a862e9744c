"""Which records are turns of a conversation regenerated turn by turn: one definition for all.

The runner writes each turn as its own record, id `CONVERSATION#turnN`, with `"conversation"`,
`"turn"` (from 1) and `"turns"`. A record is a turn only when all of them agree; anything else
(another script's `conversation` field, `"turns": "2"`, a turn past its count) is a plain
record, counted and exported as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TURN_MARK = "#turn"
"""A turn's record id is the conversation's id, this mark and the turn's number from 1."""
MAX_TURNS = 100_000


@dataclass(frozen=True, slots=True)
class TurnPlace:
    """Where a record stands in its conversation."""

    conversation: str
    turn: int
    turns: int

    @property
    def last(self) -> bool:
        """The conversation's last turn."""
        return self.turn == self.turns


def turn_id(conversation: str, turn: int) -> str:
    """The record id of turn `turn` (from 1) of a conversation."""
    return f"{conversation}{TURN_MARK}{turn}"


def turn_place(record_id: str, fields: Mapping[str, Any]) -> TurnPlace | None:
    """The record's place in its conversation, or None when it is not a turn."""
    conversation, turn, turns = fields.get("conversation"), fields.get("turn"), fields.get("turns")
    if not isinstance(conversation, str) or type(turn) is not int or type(turns) is not int:
        return None
    if not 1 <= turn <= turns <= MAX_TURNS or record_id != turn_id(conversation, turn):
        return None
    return TurnPlace(conversation, turn, turns)
