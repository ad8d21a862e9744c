"""A drafter checkpoint folder, read as its trainer's save code wrote it.

- A servable folder: `config.json` and `model.safetensors` (or shards with an index), written by
  `specforge export --to sglang|hf` (export/to_sglang.py ~57-88: architectures
  `LlamaForCausalLMEagle3`, ids in `eagle_config.eagle_aux_hidden_state_layer_ids` only when the
  user's draft config had them) or by speculators' checkpointer (`{save_path}/{epoch}/`,
  train/checkpointer.py ~339-360: `speculators_model_type`, the layer sizes under
  `transformer_layer_config`, ids at the top level). `d2t` (int64[K]) and `t2d` (bool[V]) are
  tensors of the file in both (buffers of the draft model).
- A SpecForge training step (`{run_id}-step{N}/`, training/checkpoint.py ~70-107) holds only
  `training_state.pt`: no server loads it; it is read for its `draft_state_dict` so the mapping
  can still be compared.

Tensors are opened lazily (safetensors' safe_open; torch.load with mmap): only d2t, t2d and the
shapes of fc and lm_head are read, whatever the checkpoint's size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pipeline.drafter_check.sources import whole
from agent.probes.training.config_files import UnreadableConfigError, read_mapping

TRAINING_STATE = "training_state.pt"
INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_MAPPING_IDS = 2**24
"""d2t and t2d are read whole: past 16,777,216 ids (64 times the largest vocabulary shipped) a
tensor is not a vocabulary mapping, and is not read."""


@dataclass
class DraftFacts:
    """What the checkpoint says of itself; None where it says nothing."""

    folder: Path
    layout: str = "unknown"
    """specforge (an export), speculators, specforge-training, or unknown."""
    architecture: str = ""
    speculators_layer: str | None = None
    """transformer_layer_config.model_type of a speculators folder."""
    vocab_size: int | None = None
    draft_vocab_size: int | None = None
    hidden_size: int | None = None
    target_hidden_size: int | None = None
    max_positions: int | None = None
    dtype: str = ""
    nested_ids: tuple[int, ...] | None = None
    """eagle_config.eagle_aux_hidden_state_layer_ids (SpecForge's numbering: SGLang reads it)."""
    top_ids: tuple[int, ...] | None = None
    """eagle_aux_hidden_state_layer_ids at the top level (vLLM's numbering: vLLM reads it)."""
    tensors: dict[str, Any] = field(default_factory=dict)
    """d2t and t2d as numpy arrays, where the file has them."""
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """fc.weight and lm_head.weight."""
    unreadable: str = ""


def read_checkpoint(folder: Path) -> DraftFacts:
    """The facts of `folder`; `unreadable` says why when it cannot be read as a drafter."""
    facts = DraftFacts(folder)
    if not folder.is_dir():
        facts.unreadable = f"{folder} is not a folder"
        return facts
    if (folder / TRAINING_STATE).is_file() and not (folder / "config.json").is_file():
        facts.layout = "specforge-training"
        try:
            _read_training_state(folder / TRAINING_STATE, facts)
        except Exception as exc:  # torch's UnpicklingError, a zip that is not one: "cannot load"
            facts.unreadable = (
                f"{TRAINING_STATE} cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
            )
        return facts
    try:
        config = read_mapping(folder / "config.json")
    except UnreadableConfigError as exc:
        facts.unreadable = f"config.json: {exc}"
        return facts
    _read_config(config, facts)
    try:
        _read_weights(folder, facts)
    except Exception as exc:  # safetensors' own SafetensorError among them: any is "cannot load"
        facts.unreadable = f"its weights cannot be read ({type(exc).__name__}: {str(exc)[:200]})"
    return facts


def _read_config(config: dict[str, Any], facts: DraftFacts) -> None:
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        facts.architecture = architectures[0][:100]
    layer = config.get("transformer_layer_config")
    if "speculators_model_type" in config and isinstance(layer, dict):
        facts.layout = "speculators"
        facts.speculators_layer = str(layer.get("model_type", ""))[:40]
        sizes = layer
    else:
        facts.layout = "specforge"
        sizes = config
    facts.vocab_size = whole(sizes.get("vocab_size"))
    facts.hidden_size = whole(sizes.get("hidden_size"))
    facts.max_positions = whole(sizes.get("max_position_embeddings"))
    facts.draft_vocab_size = whole(config.get("draft_vocab_size"))
    facts.target_hidden_size = whole(config.get("target_hidden_size"))
    facts.dtype = str(config.get("dtype") or config.get("torch_dtype") or "")[:40]
    eagle = config.get("eagle_config")
    if isinstance(eagle, dict):
        facts.nested_ids = _ids(eagle.get("eagle_aux_hidden_state_layer_ids"))
    facts.top_ids = _ids(config.get("eagle_aux_hidden_state_layer_ids"))


def _read_weights(folder: Path, facts: DraftFacts) -> None:
    """d2t, t2d and the shapes of fc and lm_head, from whichever file holds each."""
    from safetensors import safe_open

    wanted = {"d2t", "t2d", "fc.weight", "lm_head.weight"}
    for path in _weight_files(folder, wanted, facts):
        with safe_open(str(path), framework="numpy") as handle:
            for name in wanted & set(handle.keys()):
                shape = tuple(handle.get_slice(name).get_shape())
                facts.shapes[name] = shape
                if name in ("d2t", "t2d") and len(shape) == 1 and shape[0] <= MAX_MAPPING_IDS:
                    facts.tensors[name] = handle.get_tensor(name)


def _weight_files(folder: Path, wanted: set[str], facts: DraftFacts) -> list[Path]:
    if (folder / SINGLE).is_file():
        return [folder / SINGLE]
    index = folder / INDEX
    if not index.is_file():
        facts.unreadable = f"no {SINGLE} and no {INDEX} in {folder}: no weights to serve"
        return []
    if index.stat().st_size > MAX_INDEX_BYTES:
        facts.unreadable = f"{INDEX} is over {MAX_INDEX_BYTES:,} bytes"
        return []
    weight_map = json.loads(index.read_bytes()).get("weight_map", {})
    if not isinstance(weight_map, dict):
        raise ValueError(f"{INDEX} has no weight_map object")
    names = {str(weight_map[n]) for n in wanted if n in weight_map}
    files = [folder / name for name in sorted(names) if "/" not in name and name != ".."]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise OSError(f"{INDEX} names {missing[0]}, which is not in {folder}")
    return files


def _read_training_state(path: Path, facts: DraftFacts) -> None:
    """SpecForge's shared training state: its draft_state_dict holds d2t, t2d, fc and lm_head."""
    import torch

    state = torch.load(str(path), map_location="cpu", weights_only=True, mmap=True)
    draft = state.get("draft_state_dict") if isinstance(state, dict) else None
    if not isinstance(draft, dict):
        facts.unreadable = f"{path.name} has no draft_state_dict"
        return
    for name in ("d2t", "t2d", "fc.weight", "lm_head.weight"):
        tensor = draft.get(name)
        if isinstance(tensor, torch.Tensor):
            facts.shapes[name] = tuple(tensor.shape)
            if name in ("d2t", "t2d") and tensor.dim() == 1 and len(tensor) <= MAX_MAPPING_IDS:
                facts.tensors[name] = tensor.numpy()


def _ids(value: Any) -> tuple[int, ...] | None:
    """Layer ids as written, negatives kept (the range field refuses them); None if not ids."""
    if not isinstance(value, list) or not 0 < len(value) <= 16:
        return None
    if not all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        return None
    return tuple(value)
