"""The evaluation sets the training data must not hold (`--exclude FILE`), read into one n-gram index.

Each FILE is a prompts file in the runner's format, read by the runner's own reader; its name
without the extension names it in the reports (`humaneval.jsonl` -> `humaneval`). A file that
cannot serve is refused before the export writes anything, with its line and what is wrong.
Must not: write anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pipeline.export.ngrams import NgramIndex, build_index
from agent.pipeline.export.prompt_text import Decode, visible_text, words_of
from agent.pipeline.inference.prompts import Prompt, PromptsError, read_prompts

DEFAULT_NGRAM = 13
"""Words a training prompt may share with an evaluation prompt, plus one (as GPT-3 and Llama 2)."""
NGRAM_RANGE = (8, 50)


class ExclusionError(Exception):
    """An --exclude file cannot be used; the message names it and why."""


@dataclass(frozen=True, slots=True)
class Exclusions:
    """The excluded sets' index, and what each held."""

    index: NgramIndex
    files: dict[str, dict[str, Any]]
    """Per set: its file, prompts, and prompts shorter than n words (matched whole)."""


def load_exclusions(paths: Sequence[Path], n: int, decode: Decode) -> Exclusions:
    """Every file's prompts as words, indexed; ExclusionError for one that cannot serve."""
    named = _named(list(dict.fromkeys(_resolved(path) for path in paths)))
    sets = [(name, _words_of_file(path, decode)) for name, path in named.items()]
    files = {
        name: {"file": str(named[name]), "prompts": len(words), "whole": _short(words, n)}
        for name, words in sets
    }
    return Exclusions(build_index(sets, n), files)


def _named(paths: list[Path]) -> dict[str, Path]:
    """Each file under its name; two of one name each under its folder's name too."""
    stems = [source_name(path) for path in paths]
    named: dict[str, Path] = {}
    for path, stem in zip(paths, stems, strict=True):
        name = f"{path.parent.name}/{stem}" if stems.count(stem) > 1 else stem
        if name in named:
            raise ExclusionError(
                f"--exclude {named[name]} and {path} would both be reported as {name!r}: "
                "rename one of them"
            )
        named[name] = path
    return named


def _resolved(path: Path) -> Path:
    """The file itself, however it was spelled (the same file named twice is read once)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def source_name(path: Path) -> str:
    """The name a file's matches are counted under: its name without the extension."""
    return path.stem or path.name


def _words_of_file(path: Path, decode: Decode) -> list[list[str]]:
    try:
        prompts = read_prompts(path)
    except PromptsError as exc:
        raise ExclusionError(f"--exclude: {exc}") from None
    if not prompts:
        raise ExclusionError(
            f"--exclude {path}: no prompt in it; give the evaluation's prompts file, one JSON "
            'object a line with "messages", "prompt" or "input_ids"'
        )
    words = [_words(path, prompt, decode) for prompt in prompts]
    if not any(words):
        raise ExclusionError(f"--exclude {path}: no prompt in it has a word to match")
    return words


def _words(path: Path, prompt: Prompt, decode: Decode) -> list[str]:
    try:
        text = visible_text(prompt, decode)  # only decoding input_ids can fail
    except Exception as exc:  # the tokenizer's own code may raise anything on odd ids
        raise ExclusionError(
            f"--exclude {path} line {prompt.line_no}: its input_ids do not decode with this "
            f"tokenizer ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from None
    return words_of(text)


def _short(prompts: list[list[str]], n: int) -> int:
    return sum(0 < len(words) < n for words in prompts)
