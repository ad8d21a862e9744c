"""V, the target vocabulary size: t2d's length, which every trainer checks against the model.

It comes from the model's config.json (named by --model-config, or found beside --tokenizer),
or from --target-vocab-size, which must then agree with any config given or found. The
tokenizer, when given, is a check: a config smaller than the tokenizer is a wrong pairing, and
a larger one is the normal padding (reported, never counted). With a tokenizer but no config
nothing is guessed: len(tokenizer) is often not the size the trainers check (Qwen3-8B's
151,669 against 151,936), so the job refuses, saying which file to name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.pipeline.tokenizer import TokenizerError, load_tokenizer
from agent.pipeline.vocab.config import MAX_VOCAB_SIZE, ConfigVocab, read_config_vocab
from agent.pipeline.vocab.errors import VocabUsageError

CONFIG_NAME = "config.json"


class TokenizerRefusedError(VocabUsageError):
    """The tokenizer cannot be loaded as asked (a usage error, exit 2)."""


@dataclass(frozen=True, slots=True)
class VocabAsked:
    """What the command line says about V."""

    target_vocab_size: int | None = None
    model_config: Path | None = None
    tokenizer: str | None = None
    trust_remote_code: bool = False


@dataclass(frozen=True, slots=True)
class TargetVocab:
    """V, where it came from, and the tokenizer's own length when one was given."""

    size: int
    source: str
    tokenizer_size: int | None = None
    config_path: Path | None = None
    """The target's config.json V was checked against, when one was read."""

    @property
    def padding_ids(self) -> int | None:
        """Ids past the tokenizer's that the model's config adds (never produced, never counted)."""
        return None if self.tokenizer_size is None else self.size - self.tokenizer_size

    def said(self) -> str:
        """One progress line about V."""
        line = f"vocab: V = {self.size:,} ({self.source})"
        if self.padding_ids:
            line += f"; the tokenizer has {self.tokenizer_size:,} ids, so t2d holds "
            line += f"{self.padding_ids:,} padding ids past them (never counted)"
        return line


def resolve_target_vocab(asked: VocabAsked) -> TargetVocab:
    """V as asked, checked against the config and the tokenizer; VocabUsageError if it cannot be."""
    tokenizer_size = _tokenizer_size(asked) if asked.tokenizer is not None else None
    config_path = asked.model_config or _config_beside(asked.tokenizer)
    config = read_config_vocab(config_path) if config_path is not None else None
    size, source = _chosen(asked, config)
    if tokenizer_size is not None and tokenizer_size > size:
        raise VocabUsageError(
            f"the tokenizer in {asked.tokenizer} has {tokenizer_size:,} ids but V is {size:,} "
            f"({source}): its ids from {size:,} up could not be mapped; name the config.json of "
            "this tokenizer's own model with --model-config PATH"
        )
    return TargetVocab(size, source, tokenizer_size, config_path)


def _tokenizer_size(asked: VocabAsked) -> int:
    try:
        tokenizer = load_tokenizer(str(asked.tokenizer), trust_remote_code=asked.trust_remote_code)
    except TokenizerError as exc:
        raise TokenizerRefusedError(str(exc)) from None
    return len(tokenizer)


def _config_beside(tokenizer: str | None) -> Path | None:
    """The config.json in the tokenizer's folder, if there is one."""
    if tokenizer is None:
        return None
    folder = Path(tokenizer)
    candidate = (folder if folder.is_dir() else folder.parent) / CONFIG_NAME
    return candidate if candidate.exists() else None


def _chosen(asked: VocabAsked, config: ConfigVocab | None) -> tuple[int, str]:
    if asked.target_vocab_size is not None:
        return _explicit(asked.target_vocab_size, config)
    if config is None:
        raise VocabUsageError(_no_config(asked.tokenizer))
    if config.size is None:
        raise VocabUsageError(
            f"{config.said()} differ: SpecForge sizes t2d by padded_vocab_size, speculators "
            "by vocab_size; give --target-vocab-size N with the one your trainer uses"
        )
    return config.size, config.said()


def _explicit(size: int, config: ConfigVocab | None) -> tuple[int, str]:
    if not 0 < size <= MAX_VOCAB_SIZE:
        raise VocabUsageError(
            f"--target-vocab-size {size} must be a whole number from 1 to {MAX_VOCAB_SIZE:,}"
        )
    if config is None:
        return size, "--target-vocab-size, no config.json to check it against"
    if size not in config.sizes.values():
        raise VocabUsageError(
            f"--target-vocab-size {size:,} differs from {config.said()}: the trainers size t2d "
            "by the config and refuse a mapping of another size; leave --target-vocab-size out"
        )
    return size, f"--target-vocab-size, as {config.said()}"


def _no_config(tokenizer: str | None) -> str:
    if tokenizer is None:
        return "give --target-vocab-size, --tokenizer or --model-config"
    return (
        f"no {CONFIG_NAME} beside the tokenizer in {tokenizer}: the trainers size t2d by the "
        "model's config.json vocab_size, often padded past the tokenizer's length; give "
        "--model-config PATH to the target model's config.json, or --target-vocab-size N"
    )
