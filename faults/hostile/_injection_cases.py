"""The hostile strings of the injection scenario, drawn from a fixed alphabet by a seeded Random.

Every shell-active fragment that could run something runs the canary: `touch` of a file whose
name holds this run's nonce, so a single interpretation by any shell leaves a file behind.
`${IFS}` holds a bare `{name}`, which the agent reads as a placeholder by design: a value with an
unknown one must be refused, naming the known placeholders.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

CANARY = "CANARY"
"""Stands for the canary path in the fragments; replaced per run."""

FRAGMENTS = (
    ";", "|", "&", "&&", "||", "$(touch CANARY)", "`touch CANARY`", "; touch CANARY",
    "| touch CANARY", "& touch CANARY &", "&& touch CANARY", "\ntouch CANARY\n", "> CANARY",
    "'", '"', "'\"'\"'", "\\", "\n", "\r\n", "\t", " ", "*", "?", "[a-z]", "~", "{a,b}", "$HOME",
    "${IFS}", "$((1+1))", "!!", "#", "%s%n", "-", "--", "-rf", "--token-budget=1", "..", "/",
    "é", "日本語", "🦅", "\u202e", "\u200b", "\x1b[31m", "\udc80", "\0",
)  # fmt: skip
"""Shell metacharacters, quotes, whitespace, globs, options, non-ASCII, an undecodable byte as
Python carries it (lone surrogate for 0x80), and NUL (which no argv or environment can carry)."""

DATASET_NAMES_SAFE = (
    "ds; touch CANARY", "ds$(touch CANARY)", "ds`touch CANARY`", "ds 'single' \"double\"",
    "ds\nnewline", "ds*?[a-z]~", "ds|pipe&and", "dataset-é日本語🦅", "ds\\back\tslash",
    "ds > CANARY",
)  # fmt: skip
"""Folder names a dataset may have: each must reach the job byte for byte."""

DATASET_NAMES_REFUSED = (
    "-rf", "--budget=1", ".hidden", "..", ".", "../sentinel", "ok/../../sentinel", "/etc",
    "ds\0nul", "no-such-dataset",
)  # fmt: skip
"""Names that must be refused: option-like or hidden folders that exist, paths, NUL, unknown."""

MADE_FOLDERS = ("-rf", "--budget=1", ".hidden")
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
"""A bare name in braces, as the agent's job specs document them; no fragment names a known one."""
"""Refused names that exist as folders under the root, so only the name check can refuse them."""


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile launch: where the hostile strings go, the strings, and the verdict due."""

    index: int
    kind: str
    """argv (later argv items), env (a value in the job's env) or dataset (the {dataset} name)."""
    values: tuple[str, ...]
    must_refuse: bool
    """NUL cannot reach a job, nor an unknown placeholder, nor an option-like, hidden, path-like or
    unknown dataset name."""


def hostile_string(rng: random.Random) -> str:
    """One to four fragments, sometimes led by a dash."""
    text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 4)))
    return ("-" + text) if rng.random() < 0.2 else text


def draw_case(rng: random.Random, index: int) -> Case:
    """Roughly half argv cases, a quarter env, a quarter dataset names."""
    kind = rng.choice(("argv", "argv", "env", "dataset"))
    if kind == "dataset":
        name = rng.choice(DATASET_NAMES_SAFE + DATASET_NAMES_REFUSED)
        return Case(index, kind, (name,), name in DATASET_NAMES_REFUSED)
    count = 1 if kind == "env" else rng.randint(1, 3)
    values = tuple(hostile_string(rng) for _ in range(count))
    refused = any("\0" in value or PLACEHOLDER.search(value) for value in values)
    return Case(index, kind, values, refused)


def with_canary(case: Case, absolute: str, relative: str) -> Case:
    """The case with a canary in place of its token: a bare file name in dataset names."""
    canary = relative if case.kind == "dataset" else absolute
    values = tuple(value.replace(CANARY, canary) for value in case.values)
    return Case(case.index, case.kind, values, case.must_refuse)
