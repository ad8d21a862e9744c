"""A tiktoken encoding behind a `PreTrainedTokenizer`, laid out as Kimi-K2's tokenizer folder is.

The tests copy this file into a generated tokenizer folder, next to `tiktoken.model` and a
`tokenizer_config.json` whose `auto_map` names it, so transformers runs it only with
`trust_remote_code=True`. Written for these tests; it follows Kimi's layout, not its code.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from transformers import PreTrainedTokenizer

PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"""
    r"""|\s+(?!\S)|\s+"""
)
"""How text is split before the byte-pair merges (a GPT-2-like split)."""


def _byte_symbols() -> dict[int, str]:
    """One printable character per byte, so every token has a string form (as GPT-2's does)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    extra = (b for b in range(256) if b not in printable)
    return {b: chr(b) for b in printable} | {b: chr(256 + n) for n, b in enumerate(extra)}


class TikTokenTokenizer(PreTrainedTokenizer):
    """Token ids from a tiktoken encoding; special tokens from `added_tokens_decoder`."""

    vocab_files_names = {"vocab_file": "tiktoken.model"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file: str, **kwargs: Any) -> None:
        self.vocab_file = vocab_file
        added = kwargs.get("added_tokens_decoder") or {}
        specials = {str(token): int(index) for index, token in added.items()}
        self.model = tiktoken.Encoding(
            name=Path(vocab_file).name,
            pat_str=PATTERN,
            mergeable_ranks=load_tiktoken_bpe(vocab_file),
            special_tokens=specials,
        )
        symbols = _byte_symbols()
        self._byte_of = {symbol: byte for byte, symbol in symbols.items()}
        self._token_of: dict[int, str] = {}
        for index in range(self.model.n_vocab):
            if index not in specials.values():
                raw = self.model.decode_single_token_bytes(index)
                self._token_of[index] = "".join(symbols[b] for b in raw)
        self._id_of = {token: index for index, token in self._token_of.items()}
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    @property
    def vocab_size(self) -> int:
        """Every id of the encoding, special ones included."""
        return int(self.model.n_vocab)

    def get_vocab(self) -> dict[str, int]:
        """Token string to id, special tokens included."""
        return {**self._id_of, **{str(t): i for i, t in self._added_tokens_decoder.items()}}

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        return [self._token_of[i] for i in self.model.encode_ordinary(text)]

    def _convert_token_to_id(self, token: str) -> int:
        return self._id_of[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self._token_of[index]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        """The text a run of (non-special) tokens stands for."""
        raw = bytes(self._byte_of[c] for token in tokens for c in token)
        return raw.decode("utf-8", errors="replace")

    def save_vocabulary(
        self, save_directory: str, filename_prefix: str | None = None
    ) -> tuple[str]:
        """Copy tiktoken.model into `save_directory`."""
        name = (filename_prefix + "-" if filename_prefix else "") + "tiktoken.model"
        target = Path(save_directory) / name
        if Path(self.vocab_file).resolve() != target.resolve():
            shutil.copyfile(self.vocab_file, target)
        return (str(target),)
