"""The special token ids of a loaded tokenizer: its named ones and every added special token.

A model may end a turn on a token the tokenizer does not call EOS (Gemma's `<end_of_turn>`,
Llama 3's `<|eot_id|>`), registered only as an added special token: both lists count.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

_KNOWN: weakref.WeakKeyDictionary[Any, frozenset[int]] = weakref.WeakKeyDictionary()


def special_ids(tokenizer: Any) -> frozenset[int]:
    """Every special token id of `tokenizer` (read once per loaded tokenizer)."""
    with contextlib.suppress(KeyError, TypeError):
        return _KNOWN[tokenizer]
    found = {int(i) for i in getattr(tokenizer, "all_special_ids", ()) or ()}
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    found |= {int(i) for i, token in decoder.items() if getattr(token, "special", False)}
    with contextlib.suppress(TypeError):
        _KNOWN[tokenizer] = frozenset(found)
    return frozenset(found)
