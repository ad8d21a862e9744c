"""One sample file of each trainer's layout, opened and checked tensor by tensor.

SpecForge 0.2.0: `data_{i}.ckpt` (`.ckpt.gz` with --compress), a torch.save'd dict holding
`input_ids [seq]`, `loss_mask [seq]`, `hidden_state [1, seq, H]` and `aux_hidden_state
[1, seq, 3H]` (the keys its reader requires, runtime/data_plane/offline_reader.py:46; opened as its
feature_store.load_feature_file opens them, gzip first). speculators 0.9.0: `hs_{i}.safetensors`
holding `hidden_states [seq, layers, H]` and `token_ids [seq]` (train/data.py 310-329).
"""

from __future__ import annotations

import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

SUFFIXES = {"specforge": (".ckpt", ".ckpt.gz"), "speculators": (".safetensors",)}
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with one field of one sample file."""

    file: str
    field: str
    problem: str


def sample_files(folder: Path, trainer: str) -> list[Path]:
    """Every sample file under `folder`, sorted as the trainers list them."""
    suffixes = SUFFIXES[trainer]
    return sorted(p for p in folder.rglob("*") if p.name.endswith(suffixes) and p.is_file())


def check_sample(path: Path, trainer: str, hidden: int, dtype: str) -> list[Problem]:
    """The problems of one sample file ([] when it is what the trainer needs)."""
    try:
        tensors = _load(path, trainer)
    except Exception as exc:  # a torn, foreign or hostile file: its own problem, never the check's
        return [Problem(path.name, "file", f"cannot be opened: {type(exc).__name__}: {exc}"[:300])]
    if trainer == "specforge":
        return _specforge(path.name, tensors, hidden, DTYPES.get(dtype))
    return _speculators(path.name, tensors, hidden, DTYPES.get(dtype))


def _load(path: Path, trainer: str) -> dict[str, Any]:
    if trainer == "speculators":
        return dict(load_file(str(path)))
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            raw = torch.load(io.BytesIO(handle.read()), weights_only=True)
    else:
        raw = torch.load(path, weights_only=True, mmap=True)
    if not isinstance(raw, dict):
        raise TypeError(f"holds a {type(raw).__name__}, not a dict of tensors")
    return raw


def _specforge(name: str, tensors: dict[str, Any], hidden: int, dtype: Any) -> list[Problem]:
    problems = _missing(
        name, tensors, ("input_ids", "loss_mask", "hidden_state", "aux_hidden_state")
    )
    if problems:
        return problems
    seq = tensors["input_ids"].numel()
    wanted = {
        "loss_mask": (seq,),
        "hidden_state": (seq, hidden),
        "aux_hidden_state": (seq, 3 * hidden),
    }
    for key, shape in wanted.items():
        problems += _shape(name, key, tensors[key], shape)
    for key in ("hidden_state", "aux_hidden_state"):
        problems += _values(name, key, tensors[key], dtype)
    return problems


def _speculators(name: str, tensors: dict[str, Any], hidden: int, dtype: Any) -> list[Problem]:
    problems = _missing(name, tensors, ("hidden_states", "token_ids"))
    if problems:
        return problems
    states, seq = tensors["hidden_states"], tensors["token_ids"].numel()
    if (
        states.dim() != 3
        or states.shape[0] != seq
        or states.shape[2] != hidden
        or states.shape[1] < 2
    ):
        return [Problem(name, "hidden_states", f"shape {tuple(states.shape)}, expected "
                        f"({seq}, layers, {hidden}) for its {seq} token_ids")]  # fmt: skip
    return _values(name, "hidden_states", states, dtype)


def _missing(name: str, tensors: dict[str, Any], keys: tuple[str, ...]) -> list[Problem]:
    return [
        Problem(name, key, "missing" if key not in tensors else "not a tensor")
        for key in keys
        if not isinstance(tensors.get(key), torch.Tensor)
    ]


def _shape(name: str, key: str, tensor: torch.Tensor, wanted: tuple[int, ...]) -> list[Problem]:
    """Leading dimensions of 1 aside (SpecForge keeps a batch of one), the shape must be `wanted`."""
    shape = tuple(tensor.shape)
    while len(shape) > len(wanted) and shape[0] == 1:
        shape = shape[1:]
    if shape == wanted:
        return []
    return [Problem(name, key, f"shape {tuple(tensor.shape)}, expected {wanted} (ids x width)")]


def _values(name: str, key: str, tensor: torch.Tensor, dtype: Any) -> list[Problem]:
    problems = []
    if dtype is not None and tensor.dtype != dtype:
        problems.append(Problem(name, key, f"dtype {tensor.dtype}, the target's is {dtype}"))
    values = tensor.float()
    if not bool(torch.isfinite(values).all()):
        bad = int((~torch.isfinite(values)).sum())
        problems.append(Problem(name, key, f"{bad:,} NaN or infinite values"))
    elif values.numel() and not bool(values.any()):
        problems.append(Problem(name, key, "all zero: nothing was captured"))
    return problems
