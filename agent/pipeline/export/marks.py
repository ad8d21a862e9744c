"""What the export needs to know about the tokenizer: its special ids and its think markers.

The markers are read from the tokenizer itself, as single tokens of its vocabulary: `<think>` and
`</think>` (Kimi-K2, DeepSeek-R1, Qwen3), `◁think▷` and `◁/think▷` (Kimi-VL), `<thinking>` and
`</thinking>`. A tokenizer with none of them has no reasoning to check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.pipeline.tokenizer.identity import vocabulary_digest

THINK_PAIRS = (("<think>", "</think>"), ("◁think▷", "◁/think▷"), ("<thinking>", "</thinking>"))
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
    special = set(int(i) for i in getattr(tokenizer, "all_special_ids", ()) or ())
    decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
    special |= {int(i) for i, token in decoder.items() if getattr(token, "special", False)}
    vocab = tokenizer.get_vocab()
    size = max(len(tokenizer), max(vocab.values(), default=-1) + 1)  # ids may leave holes
    digest = vocabulary_digest(vocab)
    for start, end in THINK_PAIRS:
        if start in vocab and end in vocab:
            return TokenFacts(
                frozenset(special), int(vocab[start]), int(vocab[end]), (start, end), size, digest
            )
    return TokenFacts(frozenset(special), vocab_size=size, digest=digest)
