"""Prompts kept out of training, for the evaluation: a small slice of each dataset, the same each run.

A drafter measured on prompts it trained on flatters itself, and acceptance varies by domain
(speculators PR #610 measures 9 subsets), so each dataset leaves a few prompts out of the
trainer's files and writes them to OUT/held_out/NAME.jsonl, the evaluation's `--domain` files.
How many: 1 % of the dataset's prompts, at most `--held-out` (64 by default), none below 100
prompts. Which: those whose id hashes lowest, so a rerun or a resumed export holds out the same
ones whatever order the prompts or responses come in.
"""

from __future__ import annotations

import hashlib

HELD_OUT_MOST = 64
HELD_OUT_SHARE = 0.01
HELD_OUT_DIR = "held_out"


def held_out_count(prompts: int, most: int = HELD_OUT_MOST) -> int:
    """How many of a dataset's `prompts` are held out."""
    return max(0, min(most, int(prompts * HELD_OUT_SHARE)))


def rank_key(prompt_id: str) -> int:
    """A prompt's place in the draw: the first 8 bytes of its id's sha256, as a signed 64-bit int."""
    digest = hashlib.sha256(prompt_id.encode("utf-8", errors="surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
