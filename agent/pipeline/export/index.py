"""`prompts.jsonl` indexed by id on disk, so a response finds its prompt in flat memory.

Responses are written in completion order, not prompt order, so each one's prompt is looked up by
id. The index (id, line, byte offset, size, answered) lives in a scratch SQLite file next to the
output; the prompt line itself is read back from `prompts.jsonl` and parsed by the runner's own
prompt parser when its response comes. The index also tells duplicates (an id answered before)
and, at the end, the prompts left without an answer.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from agent.datasets.file_lines import LineBlocks, OverlongLine
from agent.datasets.response_lines import MAX_LINE_BYTES
from agent.host.regular_files import NotRegularFileError, open_regular
from agent.pipeline.export.held_out import rank_key
from agent.pipeline.inference.prompts import Prompt, PromptsError, parse_prompt_line

BATCH_ROWS = 10_000
DUPLICATE = "duplicate"
"""What `take` returns for a response whose prompt was answered already."""
HELD_OUT = "held out"
"""What `take` returns for a response whose prompt is held out of training (held_out.py)."""


class PromptIndex:
    """The prompts of one dataset, by id; open it with `build`, close it when done."""

    def __init__(self, prompts: Path, scratch_dir: Path) -> None:
        self.path = prompts
        self.count = 0
        self.first_needing: Prompt | None = None
        """The first prompt that needs a tokenizer (text or messages), for the encoder's checks."""
        self.first_chat: Prompt | None = None
        handle, name = tempfile.mkstemp(prefix=".export-index-", suffix=".sqlite", dir=scratch_dir)
        os.close(handle)
        self._scratch = Path(name)
        self._db = sqlite3.connect(name)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE prompts (id TEXT PRIMARY KEY, line INTEGER, at INTEGER, size INTEGER,"
            " draw INTEGER, answered INTEGER NOT NULL DEFAULT 0,"
            " held INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
        )
        self._fd: int | None = None

    def build(self) -> None:
        """Read every prompt line once, checked as the runner checks it; PromptsError if one fails."""
        try:
            handle = open_regular(self.path)
        except FileNotFoundError:
            raise PromptsError(f"prompts file {self.path} not found") from None
        except NotRegularFileError as exc:
            raise PromptsError(f"prompts file {exc}") from None
        except OSError as exc:
            raise PromptsError(f"cannot read prompts file {self.path}: {exc.strerror}") from None
        self._fd = os.dup(handle.fileno())
        rows: list[tuple[str, int, int, int, int]] = []
        with handle:
            for index, (offset, raw) in enumerate(_prompt_lines(handle, self.path)):
                if raw.strip():
                    rows.append(self._row(index, offset, raw))
                if len(rows) >= BATCH_ROWS:
                    self._insert(rows)
                    rows = []
        self._insert(rows)

    def _row(self, index: int, offset: int, raw: bytes) -> tuple[str, int, int, int, int]:
        prompt = parse_prompt_line(self.path, index, raw)
        if self.first_needing is None and prompt.needs_tokenizer:
            self.first_needing = prompt
        if self.first_chat is None and prompt.messages is not None:
            self.first_chat = prompt
        return (prompt.id, index + 1, offset, len(raw), rank_key(prompt.id))

    @property
    def samples(self) -> list[Prompt]:
        """The prompts the encoder checks the tokenizer against before any record is exported."""
        return [p for p in (self.first_chat, self.first_needing) if p is not None]

    def _insert(self, rows: list[tuple[str, int, int, int, int]]) -> None:
        try:
            with self._db:
                self._db.executemany(
                    "INSERT INTO prompts (id, line, at, size, draw) VALUES (?,?,?,?,?)", rows
                )
        except sqlite3.IntegrityError:
            self._duplicate(rows)
        self.count += len(rows)

    def _duplicate(self, rows: list[tuple[str, int, int, int, int]]) -> None:
        """Name the first repeated id as the runner does, with both its lines."""
        seen: dict[str, int] = {}
        for prompt_id, line, _, _, _ in rows:
            first = seen.get(prompt_id) or self._line_of(prompt_id)
            if first is not None:
                raise PromptsError(
                    f"{self.path} line {line}: duplicate id {prompt_id!r} (first at line {first})"
                )
            seen[prompt_id] = line
        raise PromptsError(f"{self.path}: a duplicate id")  # not reached: one row must repeat

    def _line_of(self, prompt_id: str) -> int | None:
        row = self._db.execute("SELECT line FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
        return int(row[0]) if row else None

    def hold_out(self, below: int) -> int:
        """Hold the prompts whose ids draw below `below` out of training; returns how many."""
        with self._db:
            self._db.execute("UPDATE prompts SET held = 1 WHERE draw < ?", (below,))
        row = self._db.execute("SELECT COUNT(*) FROM prompts WHERE held = 1").fetchone()
        return int(row[0])

    def held_lines(self) -> Iterator[bytes]:
        """The held-out prompts' lines, as they are in the prompts file, in its order."""
        assert self._fd is not None
        for offset, size in self._db.execute(
            "SELECT at, size FROM prompts WHERE held = 1 ORDER BY line"
        ).fetchall():
            yield os.pread(self._fd, size, offset)

    def take(self, prompt_id: str) -> Prompt | str | None:
        """The prompt of a response, or what stands in for it.

        None if no prompt has its id, DUPLICATE if answered already, HELD_OUT if it is held out
        of training.
        """
        row = self._db.execute(
            "SELECT line, at, size, answered, held FROM prompts WHERE id = ?", (prompt_id,)
        ).fetchone()
        if row is None:
            return None
        line, offset, size, answered, held = row
        if answered:
            return DUPLICATE
        self._db.execute("UPDATE prompts SET answered = 1 WHERE id = ?", (prompt_id,))
        if held:
            return HELD_OUT
        assert self._fd is not None
        return parse_prompt_line(self.path, line - 1, os.pread(self._fd, size, offset))

    def unanswered(self) -> int:
        """Prompts no response answered."""
        row = self._db.execute("SELECT COUNT(*) FROM prompts WHERE answered = 0").fetchone()
        return int(row[0])

    def close(self) -> None:
        """Drop the scratch file."""
        self._db.close()
        if self._fd is not None:
            os.close(self._fd)
        with contextlib.suppress(FileNotFoundError):
            self._scratch.unlink()


def _prompt_lines(handle: BinaryIO, path: Path) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every line, the last one even without its newline (as the runner reads)."""
    size = os.fstat(handle.fileno()).st_size
    blocks = LineBlocks(handle, 0, size)
    index = 0
    for item in blocks:
        if isinstance(item, OverlongLine):
            raise PromptsError(_overlong(path, index, item.size_bytes))
        for offset, line in item.lines():
            yield offset, line
            index += 1
    rest = size - blocks.offset
    if rest > MAX_LINE_BYTES:
        raise PromptsError(_overlong(path, index, rest))
    if rest:
        yield blocks.offset, os.pread(handle.fileno(), rest, blocks.offset)


def _overlong(path: Path, index: int, size: int) -> str:
    return (
        f"{path} line {index + 1}: {size:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit; "
        "fix or remove the line"
    )
