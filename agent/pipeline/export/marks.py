"""What the export needs to know about the tokenizer: its special ids and its think markers.

The markers are read from the tokenizer itself, as single tokens of its vocabulary
(`agent.pipeline.tokenizer.think`). A tokenizer with none of them has no reasoning to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.pipeline.tokenizer.identity import vocabulary_digest
from agent.pipeline.tokenizer.special import special_ids
from agent.pipeline.tokenizer.think import think_pair

OPENER_WINDOW = 16
"""A think marker this close to the end of the prompt was opened by the generation prompt."""


@dataclass(frozen=True, slots=True)
class TokenFacts:
    """Special ids and the think markers' ids (None when the tokenizer has no marker)."""

    special_ids: frozenset[int]
    think_start: int | None = None
    think_end: int | None = None
    think_names: tuple[str, str] = ("<think>", "</think>")
    vocab_size: int = 0
    """One past the tokenizer's largest id: every id must be below it (0: not checked)."""
    digest: str = ""
    """The vocabulary's digest, as the runner stamps each response line with its own."""

    def opener_start(self, sent: list[int]) -> int | None:
        """Where the think block that the prompt's end opens begins, if it does.

        A chat template that opens the assistant turn with `<think>` (Kimi-K2.5, DeepSeek-R1)
        puts it in the prompt: the model's output is the rest of that turn. An empty block the
        template closes itself (Qwen3 with thinking off) starts there too.
        """
        if self.think_start is None:
            return None
        tail = sent[-OPENER_WINDOW:]
        for back in range(len(tail) - 1, -1, -1):
            if tail[back] == self.think_start:
                return len(sent) - len(tail) + back
        return None

    def opens_reasoning(self, sent: list[int]) -> bool:
        """True when the prompt ends inside an open think block."""
        start = self.opener_start(sent)
        return start is not None and self.think_end not in sent[start:]


def token_facts(tokenizer: Any) -> TokenFacts:
    """The facts of a loaded transformers tokenizer."""
    special = special_ids(tokenizer)
    vocab = tokenizer.get_vocab()
    size = max(len(tokenizer), max(vocab.values(), default=-1) + 1)  # ids may leave holes
    digest = vocabulary_digest(vocab)
    pair = think_pair(vocab)
    if pair is not None:
        start, end, start_id, end_id = pair
        return TokenFacts(frozenset(special), start_id, end_id, (start, end), size, digest)
    return TokenFacts(frozenset(special), vocab_size=size, digest=digest)
