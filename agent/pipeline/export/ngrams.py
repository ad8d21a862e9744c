"""Word n-grams hashed to 64-bit ints, and an index of the evaluation sets' to test prompts against.

Built for tens of millions of words a minute on one core: Python hashes each word once (`hash` of
a str, salted per process, so an index serves only the process that built it); numpy rolls the
n-gram hashes over a whole batch of prompts at once, and tests them against the index's sorted
hashes behind a bit filter that clears almost every n-gram with one lookup. An evaluation prompt
shorter than n words has no n-gram; it matches a prompt of exactly its words instead.
Must not: read files, or know a prompt's shape (it takes words).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

NO_MATCH = -1
MULTIPLIER = 0x9E3779B97F4A7C15
"""Odd, so each word's place changes the n-gram's hash (a polynomial in it, mod 2**64)."""
FILTER_SLOTS_PER_NGRAM = 32
"""A filter of 32 slots an n-gram passes about one n-gram in 32 that is not in the index."""
MIN_FILTER_BITS, MAX_FILTER_BITS = 10, 26
"""Slots of one byte each: at most 64 MiB, 32 slots an n-gram up to 2M evaluation n-grams."""


@dataclass(frozen=True)
class NgramIndex:
    """The n-grams of named sets of prompts, each with the first set that has it."""

    n: int
    sources: tuple[str, ...]
    hashes: NDArray[np.uint64]
    """Sorted, each once."""
    source_of: NDArray[np.int64]
    """The index in `sources` of the first set with each hash."""
    whole: dict[int, int]
    """`whole_key` of each prompt shorter than n words, and its first set."""
    filter: NDArray[np.bool_]
    """True where some hash's top bits point: a hash elsewhere is in no set."""

    def first_sources(self, prompts: Sequence[list[str]]) -> list[int]:
        """For each prompt's words, the first set it shares an n-gram with, or NO_MATCH.

        A prompt shorter than n words matches a set only with a prompt of exactly its words.
        """
        import numpy as np

        found = np.full(len(prompts), len(self.sources), dtype=np.int64)
        lengths = np.fromiter(map(len, prompts), dtype=np.int64, count=len(prompts))
        starts = np.cumsum(lengths) - lengths
        hashes = ngram_hashes(word_hashes(list(chain.from_iterable(prompts))), self.n)
        at = np.flatnonzero(self.filter[hashes >> np.uint64(64 - self.filter_bits)])
        owner = np.searchsorted(starts, at, side="right") - 1
        inside = at + self.n <= starts[owner] + lengths[owner]  # not across two prompts
        at, owner = at[inside], owner[inside]
        slot = np.minimum(np.searchsorted(self.hashes, hashes[at]), len(self.hashes) - 1)
        hit = self.hashes[slot] == hashes[at]
        np.minimum.at(found, owner[hit], self.source_of[slot[hit]])
        result = [NO_MATCH if source == len(self.sources) else source for source in found.tolist()]
        return self._whole_matches(prompts, result)

    @property
    def filter_bits(self) -> int:
        """How many top bits of a hash pick its filter slot."""
        return len(self.filter).bit_length() - 1

    def _whole_matches(self, prompts: Sequence[list[str]], found: list[int]) -> list[int]:
        for place, words in enumerate(prompts):
            if 0 < len(words) < self.n:
                found[place] = self.whole.get(whole_key(words), found[place])
        return found


def build_index(sets: Sequence[tuple[str, Sequence[list[str]]]], n: int) -> NgramIndex:
    """The index of `sets`: (name, each prompt's words), the first named first."""
    import numpy as np

    whole: dict[int, int] = {}
    parts, owners = [np.empty(0, dtype=np.uint64)], [np.empty(0, dtype=np.int64)]
    for source, (_, prompts) in enumerate(sets):
        for words in prompts:
            if 0 < len(words) < n:
                whole.setdefault(whole_key(words), source)
            hashes = ngram_hashes(word_hashes(words), n)
            parts.append(hashes)
            owners.append(np.full(len(hashes), source, dtype=np.int64))
    hashes, source_of = _first_of_each(np.concatenate(parts), np.concatenate(owners))
    names = tuple(name for name, _ in sets)
    return NgramIndex(n, names, hashes, source_of, whole, _filter(hashes))


def word_hashes(words: list[str]) -> NDArray[np.uint64]:
    """Each word's hash, as unsigned 64-bit ints."""
    import numpy as np

    return np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)


def ngram_hashes(hashes: NDArray[np.uint64], n: int) -> NDArray[np.uint64]:
    """The hash of each run of n consecutive words (none when there are fewer than n)."""
    import numpy as np

    count = len(hashes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    rolled = hashes[:count].copy()
    multiplier = np.uint64(MULTIPLIER)
    for shift in range(1, n):
        rolled *= multiplier  # wraps mod 2**64, as meant
        rolled += hashes[shift : shift + count]
    return rolled


def whole_key(words: list[str]) -> int:
    """The key of a prompt's words taken whole."""
    return hash(tuple(words))


def _first_of_each(
    hashes: NDArray[np.uint64], owners: NDArray[np.int64]
) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """Each hash once, sorted, with the lowest owner it came with."""
    import numpy as np

    order = np.lexsort((owners, hashes))
    hashes, owners = hashes[order], owners[order]
    first = np.ones(len(hashes), dtype=bool)
    first[1:] = hashes[1:] != hashes[:-1]
    return hashes[first], owners[first]


def _filter(hashes: NDArray[np.uint64]) -> NDArray[np.bool_]:
    import numpy as np

    wanted = max(len(hashes) * FILTER_SLOTS_PER_NGRAM, 1).bit_length()
    bits = min(max(wanted, MIN_FILTER_BITS), MAX_FILTER_BITS)
    slots = np.zeros(2**bits, dtype=bool)
    slots[hashes >> np.uint64(64 - bits)] = True
    return slots
