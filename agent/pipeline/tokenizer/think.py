"""The think markers a tokenizer may have, read from its vocabulary as single tokens.

`<think>` and `</think>` (Kimi-K2, DeepSeek-R1, Qwen3), `◁think▷` and `◁/think▷` (Kimi-VL),
`<thinking>` and `</thinking>`. A tokenizer with none of them has no reasoning to find.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

THINK_PAIRS = (("<think>", "</think>"), ("◁think▷", "◁/think▷"), ("<thinking>", "</thinking>"))


def think_pair(vocab: dict[str, int]) -> tuple[str, str, int, int] | None:
    """The first pair of markers the vocabulary holds: their names and ids."""
    for start, end in THINK_PAIRS:
        if start in vocab and end in vocab:
            return start, end, int(vocab[start]), int(vocab[end])
    return None


_KNOWN: weakref.WeakKeyDictionary[Any, tuple[str, str, int, int] | None] = (
    weakref.WeakKeyDictionary()
)
"""Each loaded tokenizer's markers, read once: its vocabulary may hold 200k entries."""


def tokenizer_think_pair(tokenizer: Any) -> tuple[str, str, int, int] | None:
    """The markers of a loaded tokenizer (`think_pair` of its vocabulary)."""
    with contextlib.suppress(KeyError, TypeError):
        return _KNOWN[tokenizer]
    pair = think_pair(tokenizer.get_vocab())
    with contextlib.suppress(TypeError):  # an object that cannot be weakly referenced
        _KNOWN[tokenizer] = pair
    return pair


def think_opener(tokenizer: Any) -> int | None:
    """The id of the tokenizer's think-start marker, if it has one."""
    pair = tokenizer_think_pair(tokenizer)
    return pair[2] if pair is not None else None
