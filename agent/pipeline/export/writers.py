"""The export's output files: written as `.partial`, renamed into place only when complete.

A killed export leaves no file that looks finished. Lines are built from bytes: the id lists come
straight from the responses file (the runner's fast path keeps them as text), so the id-only
form costs little more than copying them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

IDS_FILE = "ids.jsonl"
CONVERSATIONS_FILE = "specforge.jsonl"
MERGED_FOLDER = "all"
FORM_FILES = {"ids": f"ids/{IDS_FILE}", "conversations": f"conversations/{CONVERSATIONS_FILE}"}
"""Each form in a folder of its own: SpecForge and speculators load every JSONL file of a folder
they are given (speculators recursively), and refuse a folder holding two row shapes."""


class OutputFile:
    """One output file, complete or absent."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0
        self._partial = path.with_name(path.name + ".partial")
        self._handle: BinaryIO = self._partial.open("wb")

    def write(self, line: bytes) -> None:
        """Append one line (newline included)."""
        self._handle.write(line)
        self.lines += 1

    def commit(self) -> None:
        """Flush, fsync and rename into place."""
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        os.replace(self._partial, self.path)

    def abort(self) -> None:
        """Remove the partial file."""
        self._handle.close()
        self._partial.unlink(missing_ok=True)


def ids_body(prompt_ids: bytes, prompt_count: int, output_ids: bytes, output_count: int) -> bytes:
    """Everything of an ids line after its id: `,"input_ids":[...],"loss_mask":[...]}` and newline."""
    joined = (
        prompt_ids + b"," + output_ids if prompt_ids and output_ids else prompt_ids or output_ids
    )
    mask = (b"0," * prompt_count + b"1," * output_count)[:-1]
    return b',"input_ids":[' + joined + b'],"loss_mask":[' + mask + b"]}\n"


def mask_body(ids: list[int], mask: list[int]) -> bytes:
    """An ids line's body from lists: a conversation's record, loss on each answer it trains on."""
    return (
        b',"input_ids":[' + ",".join(map(str, ids)).encode() + b'],"loss_mask":['
        + ",".join(map(str, mask)).encode() + b"]}\n"
    )  # fmt: skip


def with_id(record_id: str, body: bytes) -> bytes:
    """A whole line: the id, then the body."""
    return b'{"id":' + json.dumps(record_id, ensure_ascii=False).encode() + body


def write_whole(path: Path, text: str) -> None:
    """A small file (a report, a config) written as `.partial`, then renamed into place."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def conversation_body(messages: list[dict[str, Any]]) -> bytes:
    """Everything of a conversation line after its id."""
    return (
        b',"conversations":'
        + json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode()
        + b"}\n"
    )


def copies(weight: float, key: str) -> int:
    """How many times a record goes into the merged files: floor(w), plus one by the fraction.

    The fraction is decided by a hash of the record's key, so a rerun picks the same records.
    """
    whole = int(weight)
    fraction = weight - whole
    if fraction <= 0:
        return whole
    draw = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64
    return whole + (draw < fraction)


def merged_ids(dataset: str, record_id: str, count: int) -> list[str]:
    """The ids of a record's copies in the merged files: `NAME/ID`, then `NAME/ID#2`..."""
    base = f"{dataset}/{record_id}"
    return [base if n == 0 else f"{base}#{n + 1}" for n in range(count)]


def open_outputs(folder: Path, formats: frozenset[str]) -> dict[str, OutputFile]:
    """The files of `formats` under `folder`, one folder per form (created)."""
    outputs = {}
    for form in sorted(formats):
        path = folder / FORM_FILES[form]
        path.parent.mkdir(parents=True, exist_ok=True)
        outputs[form] = OutputFile(path)
    return outputs
