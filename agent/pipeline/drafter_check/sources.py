"""What a drafter is compared with: the target's config.json and the vocab job's files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.probes.training.config_files import UnreadableConfigError, read_mapping

VOCAB_REPORT = "vocab_report.json"


@dataclass(frozen=True, slots=True)
class TargetFacts:
    """The target model's config.json (its `text_config` where the model nests one)."""

    path: Path
    vocab_size: int | None
    hidden_size: int | None
    layers: int | None
    max_positions: int | None
    dtype: str
    quantization: str
    """quantization_config.quant_method (fp8, ...), or empty."""
    padded_vocab_size: int | None = None
    """Where the config pads its vocabulary: SpecForge sizes t2d by it, speculators by vocab_size."""


@dataclass(frozen=True, slots=True)
class VocabFacts:
    """The vocab job's outputs: its report's sizes and the mapping speculators and vLLM read."""

    folder: Path
    target_vocab_size: int | None
    draft_vocab_size: int | None
    d2t: Any
    t2d: Any


def read_target(path: Path) -> TargetFacts | str:
    """The target's facts, or why its config.json cannot be read."""
    try:
        config = read_mapping(path)
    except UnreadableConfigError as exc:
        return f"the target's {path}: {exc}"
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else {}

    def value(key: str) -> Any:  # text_config first, as the trainers read it, then the top
        return text.get(key) if text.get(key) is not None else config.get(key)

    quantization = value("quantization_config")
    method = quantization.get("quant_method", "") if isinstance(quantization, dict) else ""
    dtype = value("torch_dtype") or value("dtype") or ""
    return TargetFacts(
        path, whole(value("vocab_size")), whole(value("hidden_size")),
        whole(value("num_hidden_layers")), whole(value("max_position_embeddings")),
        str(dtype).removeprefix("torch.")[:40], str(method)[:40], whole(value("padded_vocab_size")),
    )  # fmt: skip


def read_vocab(folder: Path) -> VocabFacts | str:
    """The vocab job's report and .npy files, or why they cannot be read."""
    import numpy as np

    try:
        report = read_mapping(folder / VOCAB_REPORT)
        d2t = np.load(folder / "d2t.npy", allow_pickle=False, mmap_mode="r")
        t2d = np.load(folder / "t2d.npy", allow_pickle=False, mmap_mode="r")
        if (
            d2t.ndim != 1
            or t2d.ndim != 1
            or d2t.dtype.kind not in "iu"
            or t2d.dtype.kind not in "biu"
        ):
            raise ValueError(f"d2t {d2t.dtype}{list(d2t.shape)}, t2d {t2d.dtype}{list(t2d.shape)}")
    except UnreadableConfigError as exc:
        return f"the vocab job's {VOCAB_REPORT}: {exc}"
    except (OSError, ValueError) as exc:
        return f"the vocab job's d2t.npy or t2d.npy in {folder}: {exc}"
    return VocabFacts(
        folder, whole(report.get("target_vocab_size")), whole(report.get("draft_vocab_size")),
        d2t, t2d,
    )  # fmt: skip


def whole(value: Any) -> int | None:
    """A size from a config: a whole number above 0, else None (not stated, or not a size)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
