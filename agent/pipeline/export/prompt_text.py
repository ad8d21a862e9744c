"""What a prompt says, as words to compare, and what it is, as one key to find its copies by.

Two prompts are the same question when their words are: `words_of` lowercases the text after
Unicode NFKC, turns punctuation and symbols into word breaks, and splits on whitespace, so
`Write a function: sum(a, b)!` and `write a function sum a b` give the same words. The words
are what the user sees: the contents of the system and user turns (assistant turns are answers,
not the question), the text of a `prompt`, or `input_ids` decoded by the caller's tokenizer.
`content_key` is exact instead: the roles and contents, the text or the ids, hashed.
Must not: read files, or load a tokenizer (the caller passes its decode).
"""

from __future__ import annotations

import array
import functools
import hashlib
import json
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from agent.pipeline.inference.prompts import Prompt

VISIBLE_ROLES = frozenset({"system", "user"})
WORD_BREAK_CATEGORIES = ("P", "S")
"""Unicode categories that separate words: punctuation and symbols (`+`, `=`, `$`, emoji)."""
Decode = Callable[[list[int]], str]


def words_of(text: str) -> list[str]:
    """The normalised words of `text`: NFKC, lowercased, punctuation and symbols as breaks."""
    text = unicodedata.normalize("NFKC", text).lower()
    if text.isascii():
        return text.translate(_ascii_breaks()).split()  # str.translate's fast path: ASCII only
    return _spaced_wide(text).split()


def visible_text(prompt: Prompt, decode: Decode) -> str:
    """The text of the prompt's system and user turns, its text, or its ids decoded."""
    if prompt.messages is not None:
        return "\n".join(
            _content_text(message.get("content"))
            for message in prompt.messages
            if isinstance(message, dict) and message.get("role") in VISIBLE_ROLES
        )
    if prompt.text is not None:
        return prompt.text
    return decode(prompt.input_ids or [])


def content_key(prompt: Prompt) -> int:
    """A 64-bit hash of exactly what the prompt is: its roles and contents, its text or its ids."""
    if prompt.messages is not None:
        turns = [_role_and_content(message) for message in prompt.messages]
        body = b"m" + _utf8(json.dumps(turns, ensure_ascii=False, separators=(",", ":")))
    elif prompt.text is not None:
        body = b"t" + _utf8(prompt.text)
    else:
        body = b"i" + _ids_bytes(prompt.input_ids or [])
    return int.from_bytes(hashlib.blake2b(body, digest_size=8).digest(), "little")


def _ids_bytes(ids: list[int]) -> bytes:
    try:
        return array.array("q", ids).tobytes()  # ten times a str.join of the same ids
    except OverflowError:  # an id past 64 bits: no tokenizer's, but still a prompt's contents
        return _utf8(",".join(map(str, ids)))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _role_and_content(message: Any) -> Any:
    if isinstance(message, dict):
        return [message.get("role"), message.get("content")]
    return message


def _content_text(content: Any) -> str:
    """A turn's text: a string, or the text parts of a list of parts (OpenAI's shape)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return "\n".join(text for text in texts if isinstance(text, str))
    return ""


def _spaced_wide(text: str) -> str:
    """`text` with its word breaks as spaces, without str.translate's slow path (a lookup a char).

    The ASCII marks go in one bytes.translate over the UTF-8; the others, few in one text, one
    str.replace each.
    """
    raw = text.encode("utf-8", "surrogatepass")
    spaced = raw.translate(_ascii_byte_breaks()).decode("utf-8", "surrogatepass")
    for mark in _wide_breaks().intersection(spaced):
        spaced = spaced.replace(mark, " ")
    return spaced


def _is_break(point: int) -> bool:
    return unicodedata.category(chr(point)).startswith(WORD_BREAK_CATEGORIES)


@functools.cache
def _ascii_breaks() -> dict[int, str]:
    return {point: " " for point in range(128) if _is_break(point)}


@functools.cache
def _ascii_byte_breaks() -> bytes:
    marks = bytes(_ascii_breaks())
    return bytes.maketrans(marks, b" " * len(marks))


@functools.cache
def _wide_breaks() -> frozenset[str]:
    """Every mark and symbol beyond ASCII (built once, ~0.3 s)."""
    return frozenset(chr(p) for p in range(128, sys.maxunicode + 1) if _is_break(p))
