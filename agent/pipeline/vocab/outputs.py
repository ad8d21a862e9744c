"""The vocab job's files: written in a staging folder, checked, then renamed into OUT together.

Every file a trainer or server reads is read back and checked (`check.py`, and the torch
helper for the .pt files) before anything is renamed into place, so OUT never holds a mapping
a trainer would refuse: a failed check leaves OUT as it was. The report is removed first and
written last, so a report lies only beside a complete set of files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from agent.pipeline.torch_saver import TorchSaver, TorchSaverError
from agent.pipeline.vocab.check import refusals
from agent.pipeline.vocab.draft_config import DRAFT_CONFIG
from agent.pipeline.vocab.errors import VocabError

STAGING = ".vocab-partial"
REPORT = "vocab_report.json"
FREQUENCIES = ".token_freq.npz"
PT_NAMES = {"mapping": "vocab_mapping.pt", "freq": "token_freq.pt"}


def output_names(draft: int) -> dict[str, str]:
    """Every file put in OUT (the report aside), each with what it is for."""
    return {
        "vocab_mapping.pt": "SpecForge: torch.save({'d2t': int64[K], 't2d': bool[V]})",
        "d2t.npy": "speculators --d2t-path: int64[K], target_id = i + d2t[i]",
        "t2d.npy": "speculators --t2d-path: bool[V]",
        f"d2t-{draft}.npy": "speculators' own name for K: copy beside its --data-path to be found",
        f"t2d-{draft}.npy": "speculators' own name for K: copy beside its --data-path to be found",
        token_map_name(draft): "SGLang --speculative-token-map (EAGLE-2 drafts): the K target ids",
        # DRAFT_CONFIG too when the target's config.json was read: SpecForge's --draft-config
        "token_freq.pt": "speculators' token_freq.pt: {token_id: count} over the ids counted",
    }


def token_map_name(draft: int) -> str:
    """SGLang's token map file: a list of the K target ids, ascending."""
    return f"speculative_token_map-{draft}.pt"


def write_outputs(
    out: Path, arrays: dict[str, Any], report: dict[str, Any], saver: TorchSaver,
    draft_config: dict[str, Any] | None = None,
) -> None:  # fmt: skip
    """`arrays` (counts, d2t, t2d) as every file of `output_names`, checked, then the report.

    The check is for the report's V and K, never for the arrays' own sizes. `draft_config`, when
    the target's config.json was read, is written as DRAFT_CONFIG beside them.
    """
    vocab, draft = report["target_vocab_size"], report["draft_vocab_size"]
    staging = out / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # a killed run's leftovers
    staging.mkdir(parents=True)
    try:
        _stage(staging, arrays, saver, vocab, draft)
        names = list(output_names(draft))
        if draft_config is not None:
            (staging / DRAFT_CONFIG).write_text(json.dumps(draft_config, indent=2) + "\n")
            names.append(DRAFT_CONFIG)
            report["files"] = report["files"] | {
                DRAFT_CONFIG: "SpecForge --draft-config / model.draft_model_config for this K"
            }
        (out / REPORT).unlink(missing_ok=True)
        (out / DRAFT_CONFIG).unlink(missing_ok=True)  # an earlier target's: not this one's
        for name in names:
            os.replace(staging / name, out / name)
        _write_report(out / REPORT, report)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _stage(
    staging: Path, arrays: dict[str, Any], saver: TorchSaver, vocab: int, draft: int
) -> None:
    import numpy as np

    for name in ("d2t", "t2d"):
        np.save(staging / f"{name}.npy", arrays[name])
        np.save(staging / f"{name}-{draft}.npy", arrays[name])
    _check_npy(staging, vocab, draft)
    counts = arrays["counts"]
    seen = np.flatnonzero(counts)
    np.savez(staging / FREQUENCIES, ids=seen, counts=counts[seen])
    names = PT_NAMES | {"token_map": token_map_name(draft)}
    try:
        saver.save(staging, staging / FREQUENCIES, names, vocab=vocab, draft=draft)
    except TorchSaverError as exc:
        raise VocabError(f"cannot write the .pt files in {staging.parent}: {exc}") from None


def _check_npy(staging: Path, vocab: int, draft: int) -> None:
    """Each .npy pair read back as speculators reads it (np.load), refused before the rename."""
    import numpy as np

    for suffix in ("", f"-{draft}"):
        d2t, t2d = (np.load(staging / f"{name}{suffix}.npy") for name in ("d2t", "t2d"))
        problems = refusals(d2t, t2d, vocab, draft)
        if problems:
            raise VocabError(
                f"not written: a trainer would refuse d2t{suffix}.npy/t2d{suffix}.npy for "
                f"V = {vocab:,}, K = {draft:,}: {'; '.join(problems)}"
            )


def _write_report(path: Path, report: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(partial, path)
