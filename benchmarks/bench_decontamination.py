"""Decontamination: 80M tokens of prompts against 10,000 evaluation prompts on one core. Goal < 60 s.

The export's own path, timed whole: the evaluation file read and indexed (`load_exclusions`),
then a dataset's prompts.jsonl read again, each prompt's text normalised into words, its 13-grams
tested against the index, and its contents keyed for the copies across datasets
(`PromptScreen.screen`). The prompts are synthetic chat and text prompts of a Zipf vocabulary,
about 60M words (~80M tokens at 0.75 words a token), a fifth of them with a non-ASCII character
(the slower path of str.translate); 200 of them carry a 13-to-20-word slice of an evaluation
prompt, recased and repunctuated, which must all be found, and nothing else. The process is pinned
to one CPU for the timing.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from agent.pipeline.export.exclusions import DEFAULT_NGRAM, load_exclusions
from agent.pipeline.export.screening import CONTAMINATED, PromptScreen

TOKENS = 80_000_000
WORDS_PER_TOKEN = 0.75
EVAL_PROMPTS = 10_000
PLANTED = 200
GOAL_S = 60.0
VOCABULARY = 50_000
NON_ASCII = ("naïve", "café", "“quoted”", "—", "日本語", "🙂", "½")


def vocabulary(rng: random.Random) -> np.ndarray[Any, np.dtype[np.str_]]:
    """Pseudo-words of 2 to 10 letters, some capitalised or followed by a comma or a stop."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = []
    for _ in range(VOCABULARY):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
        roll = rng.random()
        words.append(word.capitalize() if roll < 0.05 else word + "," if roll < 0.12 else word)
    return np.array(words)


class TextSource:
    """Prompt texts of Zipf-distributed words."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.draws = np.random.default_rng(seed)

    def text(self, count: int) -> str:
        picks = np.minimum(self.draws.zipf(1.15, count), VOCABULARY) - 1
        return " ".join(self.words[picks].tolist())

    def length(self, mean: float) -> int:
        return max(5, min(4000, round(self.rng.lognormvariate(0, 0.8) * mean * 0.73)))


def write_evaluation(path: Path, source: TextSource) -> list[list[str]]:
    """10,000 prompts of 20 to 400 words (about 120 on average); returns their words."""
    texts = [source.text(max(20, min(400, source.length(120)))) for _ in range(EVAL_PROMPTS)]
    with path.open("w") as handle:
        for index, text in enumerate(texts):
            line = {"id": f"eval-{index}", "messages": [{"role": "user", "content": text}]}
            handle.write(json.dumps(line) + "\n")
    return [text.split() for text in texts]


def write_dataset(
    path: Path, source: TextSource, evaluation: list[list[str]]
) -> tuple[int, set[str]]:
    """About TOKENS tokens of prompts; returns the words written and the planted prompts' ids."""
    words_wanted = int(TOKENS * WORDS_PER_TOKEN)
    written, index = 0, 0
    planted: set[str] = set()
    plant_every = words_wanted // 250 // (PLANTED + 5)
    with path.open("w") as handle:
        while written < words_wanted:
            text = source.text(source.length(250))
            if index % 5 == 0:
                text += " " + source.rng.choice(NON_ASCII)
            if len(planted) < PLANTED and index % plant_every == plant_every - 1:
                text += " " + planted_slice(source.rng, evaluation)
                planted.add(f"p{index}")
            handle.write(json.dumps(prompt_line(f"p{index}", text, index)) + "\n")
            written += len(text.split())
            index += 1
    return written, planted


def planted_slice(rng: random.Random, evaluation: list[list[str]]) -> str:
    """13 to 20 words in a row of an evaluation prompt, upper-cased and with a comma between."""
    words = rng.choice(evaluation)
    size = rng.randint(DEFAULT_NGRAM, 20)
    start = rng.randint(0, len(words) - size)
    return ", ".join(word.upper() for word in words[start : start + size]) + "!"


def prompt_line(prompt_id: str, text: str, index: int) -> dict[str, Any]:
    if index % 2:
        return {"id": prompt_id, "prompt": text}
    chat = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": text}]  # fmt: skip
    return {"id": prompt_id, "messages": chat}


def no_ids(ids: list[int]) -> str:
    raise AssertionError("the benchmark's prompts are text")


def timed_screen(evaluation: Path, prompts: Path) -> tuple[float, float, set[str], int]:
    """Wall and CPU seconds of the index and the screen; the contaminated ids; the index's size."""
    started, cpu = time.perf_counter(), time.process_time()
    exclusions = load_exclusions([evaluation], DEFAULT_NGRAM, no_ids)
    screened = PromptScreen(exclusions, no_ids).screen("B1", prompts)
    took, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    found = {pid for pid, v in screened.verdicts.items() if v.reason == CONTAMINATED}
    return took, cpu_s, found, len(exclusions.index.hashes)


def on_one_cpu() -> str:
    """Pin this process to one CPU (where the OS allows); says which."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity here)"
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return f"pinned to CPU {cpu}"


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        source = TextSource(seed=41)
        started = time.perf_counter()
        evaluation = write_evaluation(base / "evalset.jsonl", source)
        words, planted = write_dataset(base / "prompts.jsonl", source, evaluation)
        size_mb = (base / "prompts.jsonl").stat().st_size / 1e6
        print(f"wrote {words:,} words (~{words / WORDS_PER_TOKEN / 1e6:.0f}M tokens, {size_mb:,.0f} "
              f"MB) and {EVAL_PROMPTS:,} evaluation prompts in {time.perf_counter() - started:.0f} s")  # fmt: skip
        pinned = on_one_cpu()
        took, cpu_s, found, ngrams = timed_screen(base / "evalset.jsonl", base / "prompts.jsonl")
        print(
            f"decontamination, {DEFAULT_NGRAM}-grams: {words / took / 1e6:.1f}M words/s; "
            f"{took:.1f} s wall, {cpu_s:.1f} s CPU ({pinned}) against {ngrams:,} evaluation "
            f"n-grams; {len(found)} of {len(planted)} planted copies found, "
            f"{len(found - planted)} others (goal < {GOAL_S:.0f} s: "
            f"{'met' if took < GOAL_S else 'MISSED'})"
        )
        assert found == planted, (
            f"missed {sorted(planted - found)[:5]}, extra {sorted(found - planted)[:5]}"
        )
        assert took < GOAL_S, f"{took:.1f} s, over the {GOAL_S:.0f} s goal"
