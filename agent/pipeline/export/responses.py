"""The responses of a dataset, read by the project's one definition of a response line.

Lines are read a window at a time (`file_lines`), each checked by `response_lines`; a torn record
glued to a complete one gives up the complete one (`glued_lines`), as the runner and the vocab
job read them; a line that is no response is counted with the first one's reason, never guessed
at. A torn last line (a run still writing, or killed) is not read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.datasets.glued_lines import read_line
from agent.datasets.response_lines import (
    MAX_LINE_BYTES,
    ResponseLine,
    parse_response_line,
    why_not_response,
)
from agent.host.regular_files import open_regular
from agent.pipeline.vocab.count import LineTally


def read_responses(path: Path, tally: LineTally) -> Iterator[ResponseLine]:
    """Every response of `path` in file order (none if the file does not exist)."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        return
    with handle:
        for item in LineBlocks(handle, 0, os.fstat(handle.fileno()).st_size):
            if isinstance(item, OverlongLine):
                tally.skip(item.offset, functools.partial(_overlong, item.size_bytes))
                continue
            for offset, line in item.lines():
                if line.strip():
                    yield from _line_responses(line, offset, tally)


def _line_responses(line: bytes, offset: int, tally: LineTally) -> Iterator[ResponseLine]:
    response = parse_response_line(line)
    if response is not None:
        yield response
        return
    glued = [parse_response_line(r.record) for r in read_line(line).responses]
    if not glued:
        tally.skip(offset, functools.partial(why_not_response, line))
        return
    tally.glued += 1
    yield from (record for record in glued if record is not None)


def _overlong(size: int) -> str:
    return f"a line of {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit"


def finish_reason(fields: dict[str, Any]) -> str:
    """The finish reason a record gives: the runner's string, SGLang's object, or its meta_info's."""
    reason = _field(fields, "finish_reason")
    if isinstance(reason, dict):
        reason = reason.get("type")
    return reason if isinstance(reason, str) and reason else "unknown"


def prompt_tokens(fields: dict[str, Any]) -> int | None:
    """The prompt length the server counted, when the record says."""
    value = _field(fields, "prompt_tokens")
    return value if type(value) is int else None


def first_difference(one: list[Any], other: list[int]) -> int:
    """The first position where two id lists differ (the shorter's length when one is a prefix)."""
    pairs = zip(one, other, strict=False)
    return next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(one), len(other)))


def template_kwargs(fields: dict[str, Any]) -> dict[str, Any]:
    """The chat template's arguments the runner rendered the record's prompt with ({}: none)."""
    kwargs = fields.get("template_kwargs")
    return dict(kwargs) if isinstance(kwargs, dict) else {}


def _field(fields: dict[str, Any], name: str) -> Any:
    """A field of the record, else of its meta_info (SGLang's answer, kept by the runner)."""
    value = fields.get(name)
    meta = fields.get("meta_info")
    return meta.get(name) if value is None and isinstance(meta, dict) else value
