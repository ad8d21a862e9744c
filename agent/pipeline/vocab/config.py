"""The target model's vocabulary size as its config.json states it: the length trainers give t2d.

SpecForge (`target_vocab_size`: `text_config`, then `padded_vocab_size` or `vocab_size`) and
speculators (`text_config`, then `vocab_size`) size the verifier's vocabulary from the model's
config.json, which often pads it past the tokenizer's length (Qwen3-8B: 151,936). The file is
read as a peer's (`json.py`: a regular file, at most MAX_CONFIG_BYTES) and checked before
any use; every problem is one line that says what to do. `target.py` decides V from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pipeline.vocab.errors import VocabUsageError
from agent.pipeline.vocab.json import read_json_object

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""A model's config.json is a few KB (with a quantization block, tens of KB)."""
MAX_VOCAB_SIZE = 2**24
"""16,777,216 ids: 64 times the largest vocabulary shipped (Gemma 3: 262,208)."""
SIZE_KEYS = ("vocab_size", "padded_vocab_size")
WHAT_TO_DO = "give --model-config PATH to the target model's config.json, or --target-vocab-size N"


@dataclass(frozen=True, slots=True)
class ConfigVocab:
    """The vocabulary sizes a config.json states, by key (`text_config.vocab_size`, ...)."""

    path: Path
    sizes: dict[str, int]

    @property
    def size(self) -> int | None:
        """The one size every key states; None when they differ."""
        distinct = set(self.sizes.values())
        return distinct.pop() if len(distinct) == 1 else None

    def said(self) -> str:
        """`vocab_size 151,936 in /m/config.json`, every key named."""
        keys = " and ".join(f"{key} {size:,}" for key, size in self.sizes.items())
        return f"{keys} in {self.path}"


def read_config_vocab(path: Path) -> ConfigVocab:
    """The sizes `path` states; VocabUsageError, in one line, when it states none usable."""
    config = read_json_object(path, MAX_CONFIG_BYTES, "a model's config.json", WHAT_TO_DO)
    section, prefix = _text_section(config)
    sizes = {prefix + key: section[key] for key in SIZE_KEYS if section.get(key) is not None}
    if not sizes:
        raise VocabUsageError(
            f"{path} has no vocab_size (nor text_config.vocab_size): is it the target model's "
            f"config.json? {WHAT_TO_DO}"
        )
    for key, value in sizes.items():
        if type(value) is not int or not 0 < value <= MAX_VOCAB_SIZE:
            raise VocabUsageError(
                f"{path}: {key} is {repr(value)[:40]}, not a whole number from 1 to "
                f"{MAX_VOCAB_SIZE:,}; {WHAT_TO_DO}"
            )
    return ConfigVocab(path, sizes)


def _text_section(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Where the trainers look: a multimodal model's `text_config` when it states a size."""
    text = config.get("text_config")
    if isinstance(text, dict) and any(text.get(key) is not None for key in SIZE_KEYS):
        return text, "text_config."
    return config, ""
