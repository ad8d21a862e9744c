"""Prompts kept out of training, for the evaluation: a small slice of each dataset, the same each run.

A drafter measured on prompts it trained on flatters itself, and acceptance varies by domain
(speculators PR #610 measures 9 subsets), so each dataset leaves a few prompts out of the
trainer's files and writes them to OUT/held_out/NAME.jsonl, the evaluation's `--domain` files.
Which: the prompts whose id hashes below a threshold, `--held-out-share` of the hash's range (1 %
by default), none in a dataset under 100 prompts. A prompt's fate is its own: a rerun, another
order, or a dataset that grew holds out the same prompts and new ones only, so a drafter trained
on an earlier export is never measured on a prompt it trained on.
"""

from __future__ import annotations

import hashlib

HELD_OUT_SHARE = 0.01
MIN_PROMPTS = 100
"""Below this many prompts a dataset holds none out: a slice of it would measure nothing."""
HELD_OUT_DIR = "held_out"
_RANGE = 2**64


def held_out_threshold(prompts: int, share: float = HELD_OUT_SHARE) -> int | None:
    """The draw below which a prompt is held out; None when the dataset holds none out."""
    if prompts < MIN_PROMPTS or share <= 0:
        return None
    return int(share * _RANGE) - _RANGE // 2


def rank_key(prompt_id: str) -> int:
    """A prompt's draw: the first 8 bytes of its id's sha256, as a signed 64-bit int."""
    digest = hashlib.sha256(prompt_id.encode("utf-8", errors="surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
