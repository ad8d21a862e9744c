"""What the simulated model generates: Zipf-skewed token ids and response lengths.

Token ids follow a Zipf-like law over the vocabulary, so a vocab mapping built from simulator
output has real structure. Lengths come from a clipped normal distribution plus a share of
runaway answers that run to `max_new_tokens`. Both are deterministic for a given seed and prompt.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass

POOL_SIZE = 1 << 18
"""Zipf draws made at start, of which each answer is a window: drawing them is most of a
simulator's start (1 << 20 took 0.3 s of CPU, and the tests start some 200 simulators)."""


@dataclass(frozen=True, slots=True)
class LengthProfile:
    """How long the simulated answers are."""

    mean_tokens: float = 600.0
    sd_tokens: float = 250.0
    runaway_share: float = 0.0
    """Share of answers that never stop by themselves and hit max_new_tokens."""
    tokens_per_prompt_token: float = 0.0
    """Added to the mean per prompt token, so datasets of longer prompts get longer answers."""


@dataclass(frozen=True, slots=True)
class PlannedAnswer:
    """What one request will produce, decided when it arrives."""

    output_ids: list[int]
    finish: str
    """stop or length."""


class TokenSource:
    """Deterministic answers: the same seed and prompt give the same ids and length."""

    def __init__(
        self, vocab_size: int, seed: int, stop_id: int | None = None, zipf_exponent: float = 1.1
    ) -> None:
        self.vocab_size = vocab_size
        self.eos_id = vocab_size - 1 if stop_id is None else stop_id
        self.seed = seed
        rng = random.Random(seed)
        weights = [1.0 / (rank + 1) ** zipf_exponent for rank in range(vocab_size - 1)]
        ids = [i for i in range(vocab_size) if i != self.eos_id]  # the stop ends answers only
        rng.shuffle(ids)  # frequent ids spread over the vocabulary, not just the low ones
        self._pool = rng.choices(ids, cum_weights=list(itertools.accumulate(weights)), k=POOL_SIZE)

    def plan(
        self, prompt_key: bytes, max_new_tokens: int, profile: LengthProfile, prompt_tokens: int = 0,
        ignore_eos: bool = False,
    ) -> PlannedAnswer:  # fmt: skip
        """The answer to one prompt under one length profile (all max_new_tokens with ignore_eos)."""
        rng = random.Random(hashlib.sha256(str(self.seed).encode() + prompt_key).digest())
        if ignore_eos:
            return PlannedAnswer(self._slice(rng, max_new_tokens), "length")
        mean = profile.mean_tokens + profile.tokens_per_prompt_token * prompt_tokens
        wanted = max(1, round(rng.gauss(mean, profile.sd_tokens)))
        if rng.random() < profile.runaway_share or wanted >= max_new_tokens:
            return PlannedAnswer(self._slice(rng, max_new_tokens), "length")
        return PlannedAnswer(self._slice(rng, wanted - 1) + [self.eos_id], "stop")

    def _slice(self, rng: random.Random, count: int) -> list[int]:
        start = rng.randrange(POOL_SIZE)
        ids = self._pool[start : start + count]
        while len(ids) < count:
            ids += self._pool[: count - len(ids)]
        return ids
