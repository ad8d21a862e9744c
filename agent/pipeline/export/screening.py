"""Which prompts training leaves out: an evaluation's, and copies of a prompt another dataset gave.

A drafter trained on an evaluation's prompts measures a speedup there that no other prompt gets,
so a training record whose prompt shares an n-gram with an excluded set (exclusions.py) is left
out; and a prompt two datasets of one export hold (the same contents, whatever the ids) is
trained on once, from the first dataset in export order. Each dataset's prompts file is read once
more for this, in batches, before its answers are: only the verdicts are kept, by prompt id.
Repeats within one dataset are counted, not left out: repeating a prompt under new ids is how a
dataset asks for more than one answer to it.
Must not: write files, or decide which records reach training at all (held out, answered): the
caller asks about those it would train on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from agent.datasets.file_lines import OverlongLine, lines_with_tail
from agent.host.regular_files import open_regular
from agent.pipeline.export.exclusions import Exclusions
from agent.pipeline.export.ngrams import NO_MATCH
from agent.pipeline.export.prompt_text import Decode, content_key, visible_text, words_of
from agent.pipeline.inference.prompts import Prompt, PromptsError, parse_prompt_line

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

CONTAMINATED = "contaminated"
REPEATED = "repeated"
BATCH_WORDS = 1 << 20
BATCH_PROMPTS = 1 << 16


class ScreenVerdict(NamedTuple):
    """Why training leaves a prompt out, and whose: the excluded set, or the dataset that kept it."""

    reason: str
    name: str


@dataclass
class DatasetScreen:
    """One dataset's prompts that training leaves out, and its repeats."""

    verdicts: dict[str, ScreenVerdict] = field(default_factory=dict)
    repeated_within: int = 0
    """Prompts whose contents an earlier line of the same dataset has (kept)."""
    unchecked: int = 0
    """input_ids prompts the tokenizer could not decode: not checked for contamination."""


class PromptScreen:
    """The screen every dataset of one export passes through, in export order."""

    def __init__(self, exclusions: Exclusions | None, decode: Decode) -> None:
        self.exclusions = exclusions
        self.decode = decode
        self.seen = SeenContents()

    def screen(self, name: str, prompts_path: Path) -> DatasetScreen:
        """The verdicts on the prompts of dataset `name`, which then counts as seen."""
        import numpy as np

        result = DatasetScreen()
        keys = [np.empty(0, dtype=np.uint64)]
        words = functools.partial(self._words_of, result=result)
        for batch in _batches(_prompts_in(prompts_path), words):
            keys.append(self._screen_batch(batch, result))
        contents = np.unique(np.concatenate(keys))
        result.repeated_within = sum(map(len, keys)) - len(contents)
        self.seen.add(name, contents)
        return result

    def _words_of(self, prompt: Prompt, result: DatasetScreen) -> list[str]:
        if self.exclusions is None:
            return []
        try:
            return words_of(visible_text(prompt, self.decode))
        except Exception:  # the tokenizer's own code may raise anything on odd ids
            result.unchecked += 1
            return []

    def _screen_batch(
        self, batch: list[tuple[Prompt, list[str]]], result: DatasetScreen
    ) -> NDArray[np.uint64]:
        import numpy as np

        keys = np.fromiter((content_key(p) for p, _ in batch), dtype=np.uint64, count=len(batch))
        kept_by = self.seen.owners(keys)
        sources = self._contaminating([words for _, words in batch])
        for (prompt, _), source, owner in zip(batch, sources, kept_by, strict=True):
            if source is not None:
                result.verdicts[prompt.id] = ScreenVerdict(CONTAMINATED, source)
            elif owner is not None:
                result.verdicts[prompt.id] = ScreenVerdict(REPEATED, owner)
        return keys

    def _contaminating(self, prompts: list[list[str]]) -> list[str | None]:
        """For each prompt's words, the excluded set it shares an n-gram with, or None."""
        if self.exclusions is None:
            return [None] * len(prompts)
        index = self.exclusions.index
        return [None if s == NO_MATCH else index.sources[s] for s in index.first_sources(prompts)]


class SeenContents:
    """The contents of the prompts of the datasets screened so far, each with the first to have it."""

    def __init__(self) -> None:
        import numpy as np

        self.keys: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)
        self.owner: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.names: list[str] = []

    def owners(self, keys: NDArray[np.uint64]) -> list[str | None]:
        """For each key, the dataset that had it first, or None."""
        import numpy as np

        if not len(self.keys):
            return [None] * len(keys)
        slot = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = self.keys[slot] == keys
        owners = self.owner[slot].tolist()
        return [self.names[o] if h else None for o, h in zip(owners, hit.tolist(), strict=True)]

    def add(self, name: str, keys: NDArray[np.uint64]) -> None:
        """Dataset `name`'s contents (each once): those not seen before are its own."""
        import numpy as np

        new = keys[~np.isin(keys, self.keys)]
        merged = np.concatenate([self.keys, new])
        order = np.argsort(merged, kind="stable")
        owner = np.concatenate([self.owner, np.full(len(new), len(self.names), dtype=np.int64)])
        self.keys, self.owner = merged[order], owner[order]
        self.names.append(name)


def _batches(
    prompts: Iterator[Prompt], words_of: Callable[[Prompt], list[str]]
) -> Iterator[list[tuple[Prompt, list[str]]]]:
    """The prompts with their words, a million words or 65,536 prompts at a time."""
    batch: list[tuple[Prompt, list[str]]] = []
    words = 0
    for prompt in prompts:
        batch.append((prompt, words_of(prompt)))
        words += len(batch[-1][1])
        if words >= BATCH_WORDS or len(batch) >= BATCH_PROMPTS:
            yield batch
            batch, words = [], 0
    if batch:
        yield batch


def _prompts_in(path: Path) -> Iterator[Prompt]:
    """Every prompt of a prompts file the index has read already (so its lines are known good)."""
    with open_regular(path) as handle:
        for index, raw in enumerate(lines_with_tail(handle)):
            if isinstance(raw, OverlongLine):
                raise PromptsError(f"{path} line {index + 1}: over the line limit")
            if raw.strip():
                yield parse_prompt_line(path, index, raw)
