"""The counter of a `raw_responses.jsonl`: responses, tokens and answers cut, each id once.

A conversation regenerated turn by turn writes one record per turn (`"conversation"`, `"turn"`,
`"turns"`): each is an answer (its tokens count, its cut counts), and the conversation counts as
one response, comparable with its one prompt, once its last turn is in.

A torn last line is normal after a kill and is not counted until it is complete; an unparseable
complete line is corruption and is reported, never skipped silently. Reads, never writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.datasets.file_lines import OverlongLine
from agent.datasets.finish_reasons import LENGTH, cut_at_length
from agent.datasets.glued_lines import read_line
from agent.datasets.line_follower import LineFollower
from agent.datasets.response_blocks import scan_block
from agent.datasets.response_lines import (
    MAX_LINE_BYTES,
    FastLine,
    parse_response_line,
    why_not_response,
)
from agent.datasets.turn_fields import turn_place

MAX_CORRUPT_OFFSETS = 100
"""Offsets of corrupt lines kept per file; beyond that they are only counted (bounded memory)."""
_LENGTH_TEXT = f'"{LENGTH}"'.encode()
_CONVERSATION_TEXT = b'"conversation"'


@dataclass
class ResponseCounter(LineFollower):
    """Counts the responses and completion tokens of a `raw_responses.jsonl`, each id once."""

    responses: int = 0
    tokens: int = 0
    truncated_responses: int = 0
    """Answers whose record says they were cut at max_new_tokens (finish reason `length`)."""
    turn_records: int = 0
    """Records of conversation turns, each once."""
    conversations_done: int = 0
    """Conversations whose last turn is in: each is one of `responses`."""
    corrupt_lines: int = 0
    corrupt_offsets: list[int] = field(default_factory=list)
    """The first MAX_CORRUPT_OFFSETS of them."""
    first_corrupt_reason: str = ""
    seen_ids: set[str] = field(default_factory=set)

    def reset(self) -> None:
        """Forget every response counted."""
        self.responses = self.tokens = self.truncated_responses = self.corrupt_lines = 0
        self.turn_records = self.conversations_done = 0
        self.corrupt_offsets = []
        self.first_corrupt_reason = ""
        self.seen_ids = set()

    def take_lines(self, block: bytes, block_offset: int) -> None:
        """Count each response line of the block; note the byte offset of each corrupt one."""
        for offset, line in scan_block(block, block_offset):  # runner lines read in place
            if isinstance(line, FastLine):
                self._count(line.id, line.tokens, line.fields)
            else:
                self._take_line(line, offset)

    def take_overlong(self, line: OverlongLine) -> None:
        """A line longer than the read window is corrupt, whatever it holds."""
        self._corrupt(line.offset, lambda: f"a line of {line.size_bytes:,} bytes, longer than "
                      f"the {MAX_LINE_BYTES:,}-byte limit")  # fmt: skip

    def _take_line(self, line: bytes, offset: int) -> None:
        record = parse_response_line(line)
        if record is not None:
            self._count(record.id, record.tokens, record.fields)
            return
        found = read_line(line)  # a torn record glued to a complete one: count the complete one
        if found.responses:
            self._corrupt(offset, lambda: "a torn record glued to a complete one, which is counted")
        else:
            self._corrupt(offset, lambda: why_not_response(line))
        for response in found.responses:
            self._count(response.id, response.tokens, _glued_fields(response.record))

    def _count(self, response_id: str, tokens: int, fields: Mapping[str, Any]) -> None:
        if response_id in self.seen_ids:
            return
        self.seen_ids.add(response_id)
        self.tokens += tokens
        place = turn_place(response_id, fields) if "conversation" in fields else None
        if place is None:
            self.responses += 1
        else:
            self.turn_records += 1
            if place.last:
                self.responses += 1
                self.conversations_done += 1
        if fields.get("finish_reason") != "stop" and cut_at_length(fields):  # "stop": most lines
            self.truncated_responses += 1

    def _corrupt(self, offset: int, reason: Callable[[], str]) -> None:
        if not self.corrupt_lines:
            self.first_corrupt_reason = reason()
        self.corrupt_lines += 1
        if len(self.corrupt_offsets) < MAX_CORRUPT_OFFSETS:
            self.corrupt_offsets.append(offset)


def _glued_fields(record: bytes) -> dict[str, Any]:
    """The fields of a record found in a glued line; parsed only if it may say `length`."""
    parsed = (
        parse_response_line(record)
        if _LENGTH_TEXT in record or _CONVERSATION_TEXT in record
        else None
    )
    return parsed.fields if parsed is not None else {}
